// An endpoint's token counts, whichever API reported them, held to sense before the kernel bills them.
import type { ChatUsage } from '../kernel/chat-model.js';

/** Whole non-negative numbers, the cached and reasoning parts no larger than their totals. */
export function reportedUsage(
  prompt: unknown,
  completion: unknown,
  cachedPrompt: unknown,
  reasoning: unknown,
): ChatUsage {
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

function count(value: unknown, max: number): number {
  return typeof value === 'number' && Number.isFinite(value)
    ? Math.min(max, Math.max(0, Math.floor(value)))
    : 0;
}
