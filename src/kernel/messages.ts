// Chat messages in the OpenAI Chat Completions wire shape. The kernel keeps its memory in this shape so a
// checkpoint is plain JSON and a request needs no conversion; nothing here imports the `openai` package.

export interface ToolCallRequest {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCallRequest[];
  /**
   * The Responses API's output items this turn came as (reasoning, function_call, message), in order and as the
   * provider returned them: the Responses adapter sends them back as they were, so every reasoning item travels
   * with the function calls it was produced with; the Chat Completions adapter leaves them out. Opaque to the
   * kernel, which only keeps them with the turn (in memory and in checkpoints).
   */
  items?: ResponseItem[];
  /**
   * The model that returned `items`, as the request named it. Its encrypted reasoning is readable by that model
   * only: a run resumed on another model sends the turn without them (its text and calls as they were).
   */
  itemsModel?: string;
}

/** One item of a Responses API output, kept as the provider returned it (`type` is all the kernel reads). */
export type ResponseItem = { type: string } & Record<string, unknown>;

export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A function definition as the Chat Completions `tools` field carries it. */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * The Chat Completions `response_format` field: a JSON Schema the reply must follow (strict when the schema
 * allows it), or any JSON object.
 */
export type ResponseFormat =
  | { type: 'json_schema'; json_schema: { name: string; schema: Record<string, unknown>; strict: boolean } }
  | { type: 'json_object' };
