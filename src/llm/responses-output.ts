// A Responses API reply as the kernel's turn: its text, its calls, and the items it came as (kept whole, in order,
// so the reasoning goes back with the calls it was produced with). The output is the endpoint's, held to shape
// here: a garbled item is a garbled reply (retried), never a crash or a call nobody can answer.
import type OpenAI from 'openai';
import { ModelApiError } from '../kernel/errors.js';
import { truncateChars } from '../kernel/truncate.js';
import { scrubText } from '../logging/redact.js';
import type { AssistantMessage, ResponseItem, ToolCallRequest } from '../kernel/messages.js';
import { malformedReply, replyToolCall } from './reply-tool-call.js';

/** The output items a turn keeps: what the model said and did, and the reasoning that came with it. */
const KEPT_ITEMS = new Set(['reasoning', 'function_call', 'message']);

/**
 * The turn as the kernel keeps it: the text, the calls, and every item it came as, in order, with the model that
 * returned them (the only one that can read their reasoning).
 */
export function messageOf(output: readonly unknown[], model: string): AssistantMessage {
  const texts: string[] = [];
  const calls: ToolCallRequest[] = [];
  const items: ResponseItem[] = [];
  for (const item of output) {
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw malformedReply('an output item that is not an object');
    const { type } = item as { type?: unknown };
    if (typeof type !== 'string' || !KEPT_ITEMS.has(type)) continue;
    if (type === 'function_call') {
      const call = item as Partial<OpenAI.Responses.ResponseFunctionToolCall>;
      calls.push(replyToolCall(call.call_id, call.name, call.arguments));
    } else if (type === 'message') {
      texts.push(...textsOf((item as { content?: unknown }).content));
    }
    items.push(item as ResponseItem);
  }
  return {
    role: 'assistant',
    content: texts.length > 0 ? texts.join('') : null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(items.length > 0 ? { items, itemsModel: model } : {}),
  };
}

/**
 * A message's text, in order. A refusal is the model's answer too: left out, a reply of nothing but a refusal
 * would read as an empty reply, asked again step after step.
 */
function textsOf(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  const texts: string[] = [];
  for (const part of content as { type?: unknown; text?: unknown; refusal?: unknown }[]) {
    if (part?.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
    else if (part?.type === 'refusal' && typeof part.refusal === 'string') texts.push(part.refusal);
  }
  return texts;
}

/** Chat Completions' words for how the reply ended, which traces and the kernel already know. */
export function finishReasonOf(
  response: OpenAI.Responses.Response,
  message: AssistantMessage,
): string | null {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : (reason ?? 'length');
  }
  if (message.tool_calls) return 'tool_calls';
  return response.status === 'completed' ? 'stop' : (response.status ?? null);
}

/** A failed response's reason as the run's error keeps it. */
const FAILURE_REASON_MAX_CHARS = 500;

/** The failures another attempt may get past; the rest (a prompt refused, a policy) would fail the same way. */
const RETRYABLE_FAILURES = new Set(['server_error', 'rate_limit_exceeded', 'vector_store_timeout']);

/**
 * A response that came back `failed`: retried when the endpoint's code says it may pass (or says nothing). Its
 * words become the run's error, stored and shown: scrubbed and bounded like any endpoint error's.
 */
export function failedResponseError(error: unknown): ModelApiError {
  const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
  };
  const reason = typeof message === 'string' ? scrubText(message) : 'no reason given';
  const named = typeof code === 'string' ? code : undefined;
  return new ModelApiError(
    'response_failed',
    `The model endpoint's response failed${named ? ` (${named.slice(0, 64)})` : ''}: ${truncateChars(reason, FAILURE_REASON_MAX_CHARS)}`,
    { retryable: named === undefined || RETRYABLE_FAILURES.has(named) },
  );
}
