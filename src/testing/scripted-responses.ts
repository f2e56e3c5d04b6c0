// The scripted model's Responses API (`POST /v1/responses`): it refuses what OpenAI's refuses, in its words, reads
// the request's input items as the transcript they stand for (so the same script, rules and own-turn readers
// decide), and answers with output items: a reasoning model's reasoning item (encrypted, as `store: false` gets
// it), its message and its function calls. It remembers which reasoning item each call came with, and refuses a
// call sent back without it, as the provider does.
import { randomBytes } from 'node:crypto';
import type { ChatMessage, ResponseFormat, ToolCallRequest, ToolSpec } from '../kernel/messages.js';
import { SUMMARY_HEADING } from '../kernel/memory.js';
import type { RenderedReply } from './scripted-reply.js';

export interface Refusal {
  status: number;
  message: string;
  code: string | null;
  param: string | null;
}

/** A Responses request read as Chat Completions' shapes, which the rest of the scripted server works on. */
export interface ResponsesRequestView {
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
  responseFormat: ResponseFormat | undefined;
  maxTokens: number | undefined;
}

type Item = Record<string, unknown>;

/** Parameters of Chat Completions the Responses API does not take, and what it says instead. */
const CHAT_ONLY: Record<string, string> = {
  messages: "Unknown parameter: 'messages'. The Responses API takes the conversation as 'input'.",
  max_tokens: "Unknown parameter: 'max_tokens'. Use 'max_output_tokens' instead.",
  max_completion_tokens: "Unknown parameter: 'max_completion_tokens'. Use 'max_output_tokens' instead.",
  response_format:
    "Unsupported parameter: 'response_format'. In the Responses API, this parameter has moved to 'text.format'.",
  reasoning_effort:
    "Unsupported parameter: 'reasoning_effort'. In the Responses API, this parameter has moved to 'reasoning.effort'.",
};

const ENCRYPTED_CONTENT = 'reasoning.encrypted_content';

/** What the server issued: each reasoning item's encrypted content and the item that followed it. */
export class IssuedReasoning {
  private readonly reasoning = new Map<
    string,
    { encrypted: string; followedBy: string | undefined; model: unknown }
  >();
  /** A function call's or message's item id → the reasoning item it was produced with. */
  private readonly producedWith = new Map<string, string>();

  /** `model` as the request named it: only that model can read the reasoning. */
  record(output: readonly Item[], model: unknown): void {
    let current: string | undefined;
    for (const [i, item] of output.entries()) {
      if (item.type === 'reasoning') {
        current = item.id as string;
        const next = output[i + 1];
        this.reasoning.set(current, {
          encrypted: item.encrypted_content as string,
          followedBy: next?.id as string | undefined,
          model,
        });
      } else if (current !== undefined && typeof item.id === 'string') {
        this.producedWith.set(item.id, current);
      }
    }
  }

  /** The refusal of input items that break what the provider holds to; undefined when they are sound. */
  check(input: readonly Item[], store: boolean, model: unknown): Refusal | undefined {
    const present = new Set<string>();
    for (const [i, item] of input.entries()) {
      const id = typeof item.id === 'string' ? item.id : undefined;
      if (item.type === 'reasoning' && id !== undefined) {
        const issued = this.reasoning.get(id);
        if (!store && typeof item.encrypted_content !== 'string') {
          return {
            status: 404,
            message: `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
            code: null,
            param: 'input',
          };
        }
        if (
          issued &&
          typeof item.encrypted_content === 'string' &&
          item.encrypted_content !== issued.encrypted
        ) {
          return invalidInput(`The encrypted content for item ${id} could not be verified.`);
        }
        if (!issued && typeof item.encrypted_content === 'string') {
          return invalidInput(`The encrypted content for item ${id} could not be verified.`);
        }
        if (issued && typeof item.encrypted_content === 'string' && issued.model !== model) {
          // Another model's reasoning: the API cannot decrypt it.
          return {
            status: 400,
            message: `The encrypted content for item ${id} could not be verified. Reason: Encrypted content could not be decrypted or parsed.`,
            code: 'invalid_encrypted_content',
            param: null,
          };
        }
        const next = input[i + 1];
        if (issued && (issued.followedBy === undefined || next?.id !== issued.followedBy)) {
          return invalidInput(
            `Item '${id}' of type 'reasoning' was provided without its required following item.`,
          );
        }
      }
      if (id !== undefined) {
        const reasoning = this.producedWith.get(id);
        if (reasoning !== undefined && !present.has(reasoning)) {
          return invalidInput(
            `Item '${id}' of type '${String(item.type)}' was provided without its required 'reasoning' item: '${reasoning}'.`,
          );
        }
        present.add(id);
      }
    }
    return undefined;
  }
}

/** The 400 (or 404) OpenAI's Responses API answers this body with; undefined when it takes it. */
export function responsesRefusal(
  body: Record<string, unknown>,
  reasoningModel: boolean,
): Refusal | undefined {
  for (const [param, message] of Object.entries(CHAT_ONLY)) {
    if (body[param] !== undefined) return { status: 400, message, code: 'unknown_parameter', param };
  }
  if (body.stream === true) return invalid('scripted model: `stream: true` is not supported', 'stream');
  if (typeof body.input !== 'string' && !Array.isArray(body.input)) {
    return {
      status: 400,
      message: "Missing required parameter: 'input'.",
      code: 'missing_required_parameter',
      param: 'input',
    };
  }
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null && !(Number.isInteger(max) && (max as number) >= 16)) {
    return {
      status: 400,
      message: `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${JSON.stringify(max)} instead.`,
      code: 'integer_below_min_value',
      param: 'max_output_tokens',
    };
  }
  const tools = Array.isArray(body.tools) ? (body.tools as Item[]) : [];
  const unnamed = tools.findIndex((tool) => tool.type === 'function' && typeof tool.name !== 'string');
  if (unnamed >= 0) {
    return {
      status: 400,
      message: `Missing required parameter: 'tools[${unnamed}].name'.`,
      code: 'missing_required_parameter',
      param: `tools[${unnamed}].name`,
    };
  }
  if (reasoningModel) {
    if (body.temperature !== undefined && body.temperature !== 1) {
      return {
        status: 400,
        message: "Unsupported parameter: 'temperature' is not supported with this model.",
        code: 'unsupported_parameter',
        param: 'temperature',
      };
    }
    return undefined;
  }
  if (body.reasoning !== undefined) {
    return {
      status: 400,
      message: "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
      code: 'unsupported_parameter',
      param: 'reasoning.effort',
    };
  }
  if (Array.isArray(body.include) && body.include.includes(ENCRYPTED_CONTENT)) {
    return invalid('Encrypted content is not supported with this model.', 'include');
  }
  return undefined;
}

/**
 * Every function call answered by an output that follows it, every output answering a call before it: the API
 * refuses a transcript with either missing.
 */
export function pairingRefusal(input: readonly Item[]): Refusal | undefined {
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const item of input) {
    if (item.type === 'function_call') calls.add(String(item.call_id));
    if (item.type === 'function_call_output') {
      const callId = String(item.call_id);
      if (!calls.has(callId)) {
        return invalidInput(`No tool call found for function call output with call_id ${callId}.`);
      }
      answered.add(callId);
    }
  }
  for (const callId of calls) {
    if (!answered.has(callId)) return invalidInput(`No tool output found for function call ${callId}.`);
  }
  return undefined;
}

/** The request read as the transcript it stands for: instructions first, each assistant turn one message. */
export function viewOfResponsesRequest(body: Record<string, unknown>): ResponsesRequestView {
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string') messages.push({ role: 'system', content: body.instructions });
  const input =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input as Item[]);
  let turn: { role: 'assistant'; content: string | null; tool_calls?: ToolCallRequest[] } | undefined;
  for (const item of input) {
    const type = item.type ?? 'message';
    if (type === 'reasoning') {
      // A response's items start with its reasoning: what came before belongs to an earlier turn.
      turn = undefined;
      continue;
    }
    if (type === 'function_call' || (type === 'message' && item.role === 'assistant')) {
      const text = type === 'message' ? textOf(item.content) : '';
      // A turn says its text before its calls: text after calls or text starts the next turn, and the memory's
      // summary (the model's account of the turns it replaced) is a turn of its own.
      if (!turn || isSummary(turn.content) || (type === 'message' && startsTurn(turn, text))) {
        turn = { role: 'assistant', content: null };
        messages.push(turn);
      }
      if (type === 'message') turn.content = (turn.content ?? '') + text;
      else {
        (turn.tool_calls ??= []).push({
          id: String(item.call_id),
          type: 'function',
          function: { name: String(item.name), arguments: String(item.arguments) },
        });
      }
      continue;
    }
    turn = undefined;
    if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: textOf(item.output) });
    } else if (type === 'message') {
      const role = item.role === 'user' ? 'user' : 'system';
      messages.push({ role, content: textOf(item.content) });
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as Item[])
        .filter((tool) => tool.type === 'function')
        .map((tool): ToolSpec => ({
          type: 'function',
          function: {
            name: String(tool.name),
            description: typeof tool.description === 'string' ? tool.description : '',
            parameters: (tool.parameters as Record<string, unknown> | undefined) ?? {},
          },
        }))
    : [];
  const max = body.max_output_tokens;
  return {
    messages,
    tools: tools.length > 0 ? tools : undefined,
    responseFormat: responseFormatOf(body.text),
    maxTokens: typeof max === 'number' ? max : undefined,
  };
}

/** The output items of a reply, ids numbered by request; the reasoning item first, as a reasoning model's is. */
export function outputItems(
  reply: RenderedReply,
  requestIndex: number,
  reasoning: { encrypted: boolean } | undefined,
): Item[] {
  const output: Item[] = [];
  if (reasoning) {
    output.push({
      type: 'reasoning',
      id: `rs_scripted_${requestIndex}`,
      summary: [],
      ...(reasoning.encrypted ? { encrypted_content: `enc_${randomBytes(24).toString('base64url')}` } : {}),
    });
  }
  if (reply.content) {
    output.push({
      type: 'message',
      id: `msg_scripted_${requestIndex}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.content, annotations: [] }],
    });
  }
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    output.push({
      type: 'function_call',
      id: `fc_scripted_${requestIndex}_${i}`,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: 'completed',
    });
  }
  return output;
}

/** Whether a reasoning model reasons on this request: at any effort but `none`. */
export function reasonsOn(body: Record<string, unknown>): boolean {
  const effort = (body.reasoning as { effort?: unknown } | undefined)?.effort;
  return effort !== 'none';
}

/** Whether the request asks for reasoning items' encrypted content. */
export function wantsEncryptedReasoning(body: Record<string, unknown>): boolean {
  return Array.isArray(body.include) && body.include.includes(ENCRYPTED_CONTENT);
}

function responseFormatOf(text: unknown): ResponseFormat | undefined {
  const format = (text as { format?: Item } | undefined)?.format;
  if (format?.type === 'json_object') return { type: 'json_object' };
  if (format?.type !== 'json_schema') return undefined;
  return {
    type: 'json_schema',
    json_schema: {
      name: String(format.name),
      schema: (format.schema as Record<string, unknown> | undefined) ?? {},
      strict: format.strict === true,
    },
  };
}

function startsTurn(turn: { content: string | null; tool_calls?: unknown[] }, text: string): boolean {
  return turn.tool_calls !== undefined || turn.content !== null || isSummary(text);
}

function isSummary(text: string | null): boolean {
  return text?.startsWith(SUMMARY_HEADING) ?? false;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => {
      const text = (part as { text?: unknown } | null)?.text;
      return typeof text === 'string' ? text : '';
    })
    .join('');
}

function invalidInput(message: string): Refusal {
  return { status: 400, message, code: null, param: 'input' };
}

function invalid(message: string, param: string): Refusal {
  return { status: 400, message, code: null, param };
}
