// Cutting text to a token or character limit, with a marker that tells the reader (model or human) how
// much was cut, so a truncated SQL result is never mistaken for the whole one.
import type { TokenCounter } from './tokens.js';

/**
 * No token of the encodings in use covers more characters than this (runs of `=`, `-` or `_` come closest):
 * a text longer than maxTokens times this cannot fit, whatever it holds.
 */
const MAX_CHARS_PER_TOKEN = 64;
/**
 * A text up to this long is counted whatever the limit: a few ms for ordinary text, though a long run without
 * a space or punctuation costs the tokenizer quadratic time (about 2 s for 32 K of `x` here).
 */
const ALWAYS_COUNTABLE_CHARS = 32_768;

/**
 * `text` cut to `maxTokens` with a marker, or `text` itself when it fits. `countWhole` counts the whole text
 * (a counter that remembers it, when the caller will count it again); the cuts are counted with `count`.
 */
export function truncateToTokens(
  text: string,
  maxTokens: number,
  count: TokenCounter,
  countWhole: TokenCounter = count,
): string {
  // A token is at least one UTF-8 byte and a UTF-16 unit at most three: a short text fits without counting.
  if (text.length * 3 <= maxTokens) return text;
  // Counting takes time in proportion to the text (about 0.1 s per MB, on the event loop): a longer text than
  // could fit is cut to that length before counting, and its marker speaks of characters, the only total known.
  const countable = Math.max(maxTokens * MAX_CHARS_PER_TOKEN, ALWAYS_COUNTABLE_CHARS);
  if (text.length > countable) {
    const head = sliceWhole(text, countable);
    const total = text.length;
    return fitWithMarker(head, count(head), maxTokens, count, (kept) => {
      return ` …[cut: ${total - kept.length} of ${total} chars]`;
    });
  }
  const total = countWhole(text);
  if (total <= maxTokens) return text;
  return fitWithMarker(text, total, maxTokens, count, (kept) => {
    return ` …[cut: ${total - count(kept)} of ${total} tokens]`;
  });
}

/** The longest prefix of `text` (of `tokens` tokens) that fits in maxTokens with its marker. */
function fitWithMarker(
  text: string,
  tokens: number,
  maxTokens: number,
  count: TokenCounter,
  marker: (kept: string) => string,
): string {
  // Token counts are not linear in characters; shrink a proportional guess until it fits with its marker.
  let chars = Math.min(text.length, Math.floor((text.length * maxTokens) / Math.max(tokens, 1)));
  for (;;) {
    const head = sliceWhole(text, chars);
    const candidate = head + marker(head);
    if (count(candidate) <= maxTokens) return candidate;
    // Not even the marker fits: an ellipsis alone says something was cut.
    if (chars === 0) return maxTokens > 0 ? '…' : '';
    chars = Math.floor(chars * 0.9);
  }
}

export function truncateChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${sliceWhole(text, maxChars)} …[cut: ${text.length - maxChars} chars]`;
}

/** The first `end` UTF-16 units, without leaving half of a surrogate pair (an emoji) at the end. */
function sliceWhole(text: string, end: number): string {
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}
