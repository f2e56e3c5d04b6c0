// How the scripted server counts a prompt for the usage it reports. By default exactly as the documented count
// (countPromptTokens), which is what the kernel's estimate starts from. Real endpoints render the tool calls of
// the history their own way and report more than that count on tool-call-heavy conversations: this reproduces
// it, so tests can show that no budget is overshot when the endpoint counts more than the kernel expects.
import type { ChatMessage, ToolSpec } from '../kernel/messages.js';
import { countPromptTokens, type TokenCounter } from '../kernel/tokens.js';

export interface EndpointPromptCounting {
  /** Each tool call of the history counts as its whole JSON (keys, quotes, escaped arguments), not its parts. */
  serializedToolCalls?: boolean;
  /** Tokens added for each tool call of the history, on top (an endpoint's own framing). */
  extraTokensPerToolCall?: number;
}

export function endpointPromptTokens(
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[] | undefined,
  count: TokenCounter,
  counting: EndpointPromptCounting = {},
): number {
  let tokens = countPromptTokens(messages, tools, count);
  for (const message of messages) {
    if (message.role !== 'assistant' || !message.tool_calls) continue;
    for (const call of message.tool_calls) {
      tokens += counting.extraTokensPerToolCall ?? 0;
      if (!counting.serializedToolCalls) continue;
      // The documented count already holds the id, the name and the arguments: only the difference is added.
      const parts = count(call.id) + count(call.function.name) + count(call.function.arguments);
      tokens += Math.max(0, count(JSON.stringify(call)) - parts);
    }
  }
  return tokens;
}
