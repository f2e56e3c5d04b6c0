// `max_tokens` as a real endpoint applies it: the model stops mid-output, so text is cut mid-word and a tool
// call's arguments may be cut mid-JSON. Agents must survive that, so the scripted model reproduces it.
import type { ToolCallRequest } from '../kernel/messages.js';
import { countCompletionTokens, tokenCounterFor } from '../kernel/tokens.js';
import type { TokenCounter } from '../kernel/tokens.js';
import type { RenderedReply } from './scripted-reply.js';

// Cutting by characters rather than decoding a token prefix: a prefix can end inside a multi-byte character,
// and gpt-tokenizer then decodes garbage (U+FFFD, even in the middle of the text). Searching for the longest
// prefix, on code point boundaries, that the usage counter itself accepts gives valid text that never counts
// over the limit; it is exactly the limit unless the next character costs several tokens.
function cutText(text: string, maxTokens: number, count: TokenCounter): string {
  if (count(text) <= maxTokens) return text;
  const ends: number[] = [0];
  for (const char of text) ends.push((ends.at(-1) ?? 0) + char.length);
  let lo = 0; // a prefix known to fit
  let hi = ends.length - 1; // a prefix known not to fit
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (count(text.slice(0, ends[mid])) <= maxTokens) lo = mid;
    else hi = mid;
  }
  return text.slice(0, ends[lo]);
}

export interface FittedReply {
  reply: RenderedReply;
  /** Reasoning included. */
  completionTokens: number;
  reasoningTokens: number;
}

/**
 * Fits a rendered reply into `maxTokens` completion tokens. A reply that had to be cut reports exactly
 * `maxTokens` completion tokens, as a real endpoint does when it stops on the limit, even where re-counting
 * the cut text gives a little less.
 */
export function fitCompletion(
  reply: RenderedReply,
  maxTokens: number | undefined,
  model: string,
  reasoningTokens = 0,
): FittedReply {
  // A reasoning model thinks first: what it spends comes out of the same limit, and a limit it reasons through
  // ends the reply empty, cut on `length`.
  if (reasoningTokens > 0) {
    if (maxTokens !== undefined && reasoningTokens >= maxTokens) {
      return {
        reply: { content: '', toolCalls: undefined, finishReason: 'length' },
        completionTokens: maxTokens,
        reasoningTokens: maxTokens,
      };
    }
    const fitted = fitVisible(
      reply,
      maxTokens === undefined ? undefined : maxTokens - reasoningTokens,
      model,
    );
    return { ...fitted, completionTokens: fitted.completionTokens + reasoningTokens, reasoningTokens };
  }
  return { ...fitVisible(reply, maxTokens, model), reasoningTokens: 0 };
}

function fitVisible(
  reply: RenderedReply,
  maxTokens: number | undefined,
  model: string,
): Omit<FittedReply, 'reasoningTokens'> {
  const count = tokenCounterFor(model);
  const full = countCompletionTokens(reply.content, reply.toolCalls, count);
  if (maxTokens === undefined || full <= maxTokens) return { reply, completionTokens: full };

  const contentTokens = reply.content ? count(reply.content) : 0;
  if (contentTokens >= maxTokens) {
    // The text comes first in the output, so the calls after it were never generated.
    const content = reply.content === null ? null : cutText(reply.content, maxTokens, count);
    return { reply: { content, toolCalls: undefined, finishReason: 'length' }, completionTokens: maxTokens };
  }

  let remaining = maxTokens - contentTokens;
  const toolCalls: ToolCallRequest[] = [];
  for (const call of reply.toolCalls ?? []) {
    const cost = countCompletionTokens(null, [call], count);
    if (cost <= remaining) {
      toolCalls.push(call);
      remaining -= cost;
      continue;
    }
    const header = countCompletionTokens(
      null,
      [{ function: { name: call.function.name, arguments: '' } }],
      count,
    );
    if (header < remaining) {
      const args = cutText(call.function.arguments, remaining - header, count);
      toolCalls.push({ ...call, function: { ...call.function, arguments: args } });
    }
    break;
  }
  return {
    reply: {
      content: reply.content,
      toolCalls: toolCalls.length > 0 ? toolCalls : undefined,
      finishReason: 'length',
    },
    completionTokens: maxTokens,
  };
}
