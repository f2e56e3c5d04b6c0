// Cutting text to a token or character limit, with a marker that tells the reader (model or human) how
// much was cut, so a truncated SQL result is never mistaken for the whole one.
import type { TokenCounter } from '../llm/tokens.js';

export function truncateToTokens(text: string, maxTokens: number, count: TokenCounter): string {
  // A token is at least one UTF-8 byte and a UTF-16 unit at most three: a short text fits without counting.
  if (text.length * 3 <= maxTokens) return text;
  const total = count(text);
  if (total <= maxTokens) return text;
  const marker = (kept: number) => ` …[cut: ${total - kept} of ${total} tokens]`;
  // Token counts are not linear in characters; shrink a proportional guess until it fits with its marker.
  let chars = Math.floor((text.length * maxTokens) / total);
  for (;;) {
    const head = sliceWhole(text, chars);
    const kept = count(head);
    const candidate = head + marker(kept);
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
