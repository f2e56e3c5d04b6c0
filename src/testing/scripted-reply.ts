// What a scripted model says, and how it reads on the wire. A reply is written once, independent of the protocol
// the agent speaks: the same script drives an agent using native tool calls and one parsing JSON out of the
// text, so a test of one protocol is a test of the other.
import type { ToolCallRequest } from '../kernel/messages.js';

export interface ScriptedAction {
  tool: string;
  args: unknown;
  /**
   * The argument string exactly as the model writes it (spacing, key order, number forms), for a test that the
   * agent sends it back byte for byte; default, `args` as JSON.
   */
  argumentsText?: string;
}

export type ScriptedFault =
  | { fault: 'rate_limit'; retryAfterSeconds?: number }
  | { fault: 'server_error' }
  | { fault: 'flex_unavailable' }
  | { fault: 'bad_request'; message?: string }
  | { fault: 'unauthorized' }
  | { fault: 'hang' }
  | { fault: 'malformed_body' };

/**
 * `output`: a structured final answer, written as the request asks for one: the JSON object itself over tools or
 * under a response format, `{"answer": <object>}` over json.
 */
export type ScriptedContent =
  | { answer: string }
  | { output: unknown }
  | { actions: ScriptedAction[]; thought?: string }
  | { text: string };

/**
 * `usage: false`: the reply reports no usage (as some local servers do). `cachedTokens`: how many of its prompt
 * tokens the reply reports as served from the cache (at most all of them). `reasoningTokens`: how many tokens the
 * model reasons before it writes; they come out of the completion limit first, as a reasoning model's do.
 */
export type ScriptedReply = (ScriptedContent | ScriptedFault) & ReplyExtras;

interface ReplyExtras {
  latencyMs?: number;
  usage?: false;
  cachedTokens?: number;
  reasoningTokens?: number;
}

/** `tools` when the request offers native tool definitions; otherwise the agent must read JSON from the text. */
export type Protocol = 'tools' | 'json';

export type FinishReason = 'stop' | 'tool_calls' | 'length';

export interface RenderedReply {
  content: string | null;
  toolCalls: ToolCallRequest[] | undefined;
  finishReason: FinishReason;
}

export function isFault(reply: ScriptedReply): reply is ScriptedFault & ReplyExtras {
  return 'fault' in reply;
}

export function renderReply(
  reply: ScriptedContent,
  protocol: Protocol,
  requestIndex: number,
  structured = false,
): RenderedReply {
  if ('text' in reply) return { content: reply.text, toolCalls: undefined, finishReason: 'stop' };
  if ('output' in reply) {
    const bare = protocol === 'tools' || structured;
    const content = JSON.stringify(bare ? reply.output : { answer: reply.output });
    return { content, toolCalls: undefined, finishReason: 'stop' };
  }
  if ('answer' in reply) {
    const content = protocol === 'tools' ? reply.answer : JSON.stringify({ answer: reply.answer });
    return { content, toolCalls: undefined, finishReason: 'stop' };
  }
  if (protocol === 'tools') {
    // Deterministic ids let a test assert on the tool messages the agent sends back.
    const toolCalls = reply.actions.map((action, i): ToolCallRequest => ({
      id: `call_${requestIndex}_${i}`,
      type: 'function',
      function: { name: action.tool, arguments: action.argumentsText ?? JSON.stringify(action.args) },
    }));
    return { content: reply.thought ?? null, toolCalls, finishReason: 'tool_calls' };
  }
  const json =
    reply.actions.length === 1
      ? JSON.stringify({ tool: reply.actions[0]?.tool, args: reply.actions[0]?.args })
      : JSON.stringify({ tools: reply.actions.map(({ tool, args }) => ({ tool, args })) });
  const content = reply.thought === undefined ? json : `${reply.thought}\n${json}`;
  // In the JSON protocol the model only ever writes text, so it stops like any text reply.
  return { content, toolCalls: undefined, finishReason: 'stop' };
}
