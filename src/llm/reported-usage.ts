// An endpoint's token counts, whichever API reported them, held to sense before the kernel bills them.
import type { ChatUsage } from '../kernel/chat-model.js';

/**
 * Whole non-negative numbers, the cached and reasoning parts no larger than their totals. Null when the totals are
 * not counts (missing, negative, text): billed as zero they would make the run cheaper than the provider's bill,
 * so the run's own estimate stands in, as for an endpoint that reports no usage.
 */
export function reportedUsage(
  prompt: unknown,
  completion: unknown,
  cachedPrompt: unknown,
  reasoning: unknown,
): ChatUsage | null {
  if (!isCount(prompt) || !isCount(completion)) return null;
  const promptTokens = count(prompt, Number.MAX_SAFE_INTEGER);
  const completionTokens = count(completion, Number.MAX_SAFE_INTEGER);
  const cached = count(cachedPrompt, promptTokens);
  const reasoningTokens = count(reasoning, completionTokens);
  return {
    promptTokens,
    completionTokens,
    ...(cached > 0 ? { cachedPromptTokens: cached } : {}),
    ...(reasoningTokens > 0 ? { reasoningTokens } : {}),
  };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function count(value: unknown, max: number): number {
  return isCount(value) ? Math.min(max, Math.floor(value)) : 0;
}
