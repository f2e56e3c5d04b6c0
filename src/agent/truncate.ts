// Cutting text to a token or character limit, with a marker that tells the reader (model or human) how
// much was cut, so a truncated SQL result is never mistaken for the whole one.
import type { TokenCounter } from '../llm/tokens.js';

export function truncateToTokens(text: string, maxTokens: number, count: TokenCounter): string {
  const total = count(text);
  if (total <= maxTokens) return text;
  const marker = (kept: number) => ` …[cut: ${total - kept} of ${total} tokens]`;
  // Token counts are not linear in characters; shrink a proportional guess until it fits with its marker.
  let chars = Math.floor((text.length * maxTokens) / total);
  for (;;) {
    const head = text.slice(0, chars);
    const kept = count(head);
    const candidate = head + marker(kept);
    if (count(candidate) <= maxTokens || chars === 0) return candidate;
    chars = Math.floor(chars * 0.9);
  }
}

export function truncateChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)} …[cut: ${text.length - maxChars} chars]`;
}
