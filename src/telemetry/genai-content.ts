// Prompt, completion and tool text as the GenAI conventions put them in span attributes (JSON of messages made
// of parts), only when content capture is on; always scrubbed of credentials (the logs' rules) and bounded, since
// model output and tool results are hostile.
import type { AssistantMessage, ChatMessage } from '../kernel/messages.js';
import { truncateChars } from '../kernel/truncate.js';
import { redactValue, scrubText } from '../logging/redact.js';

/** Characters of one content attribute at most (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT may cut it further). */
export const CONTENT_MAX_CHARS = 16_000;

type Part =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: string };

interface GenAiMessage {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

/** Scrubbed and bounded text. */
export function safeText(text: string, maxChars = CONTENT_MAX_CHARS): string {
  return truncateChars(scrubText(text), maxChars);
}

/** A value as scrubbed, bounded JSON: secret-looking keys masked at any depth, secrets in strings scrubbed. */
export function safeJson(value: unknown, maxChars = CONTENT_MAX_CHARS): string {
  let text: string;
  try {
    text = JSON.stringify(redactValue(value)) ?? 'null';
  } catch {
    text = '"[unserializable]"';
  }
  return truncateChars(scrubText(text), maxChars);
}

/** `gen_ai.system_instructions` and `gen_ai.input.messages` of a request. */
export function inputContent(messages: readonly ChatMessage[]): { system?: string; input: string } {
  const system: Part[] = [];
  const input: GenAiMessage[] = [];
  for (const message of messages) {
    if (message.role === 'system') system.push({ type: 'text', content: message.content });
    else if (message.role === 'tool')
      input.push({
        role: 'tool',
        parts: [{ type: 'tool_call_response', id: message.tool_call_id, response: message.content }],
      });
    else if (message.role === 'assistant') input.push({ role: 'assistant', parts: assistantParts(message) });
    else input.push({ role: 'user', parts: [{ type: 'text', content: message.content }] });
  }
  return {
    ...(system.length ? { system: safeJson(system) } : {}),
    input: safeJson(input),
  };
}

/** `gen_ai.output.messages` of a reply. */
export function outputContent(message: AssistantMessage, finishReason: string | null): string {
  const output: GenAiMessage = { role: 'assistant', parts: assistantParts(message) };
  if (finishReason) output.finish_reason = finishReason;
  return safeJson([output]);
}

function assistantParts(message: AssistantMessage): Part[] {
  const parts: Part[] = [];
  if (message.content) parts.push({ type: 'text', content: message.content });
  for (const call of message.tool_calls ?? []) {
    parts.push({
      type: 'tool_call',
      id: call.id,
      name: call.function.name,
      arguments: parsed(call.function.arguments),
    });
  }
  return parts;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
