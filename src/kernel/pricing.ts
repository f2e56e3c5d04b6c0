// What token counts cost under a model's price. One function does it for checks and for reports, so the pre-call
// check and the reported cost can never disagree by a rounding.
import type { TokenUsage } from './token-usage.js';
import type { ReasoningEffort } from './chat-model.js';

/** USD per million tokens at one service tier. */
export interface TierPrice {
  inputPerMillion: number;
  /** Prompt tokens served from the provider's cache; absent, they cost the input price. */
  cachedInputPerMillion?: number;
  outputPerMillion: number;
}

/** What the kernel must know of a model to bound and bill its runs: its prices and how requests are shaped. */
export interface ModelPrice extends TierPrice {
  /** The provider's slower tier at batch prices, where the model has one. */
  flex?: TierPrice;
  /** A reasoning model: `max_completion_tokens` instead of `max_tokens`, no temperature, `reasoning_effort`. */
  reasoning?: boolean;
  /**
   * The `reasoning_effort` values a reasoning model takes. With `none` among them, its requests carry `none` unless
   * an effort is chosen (run-agent.ts); without the list, the provider's default.
   */
  reasoningEfforts?: ReasoningEffort[];
  /** The most tokens a prompt and its completion may hold together. */
  contextWindow?: number;
}

/**
 * The effort a reasoning model's requests carry when none is chosen: `none` where its price entry lists it,
 * else undefined (nothing is sent: the provider's default).
 */
export function defaultReasoningEffort(price: ModelPrice): ReasoningEffort | undefined {
  return price.reasoningEfforts?.includes('none') ? 'none' : undefined;
}

/**
 * Prompt tokens at the input price, those the provider served from its cache at the cached-input price (the
 * input price where the model has none), completion tokens (reasoning included) at the output price; the part
 * billed at the flex tier at its prices.
 */
export function costUsd(price: ModelPrice, usage: TokenUsage): number {
  const flex = usage.flex;
  if (!flex) {
    return tierCost(price, usage.promptTokens, usage.cachedPromptTokens ?? 0, usage.completionTokens);
  }
  const standard = tierCost(
    price,
    usage.promptTokens - flex.promptTokens,
    (usage.cachedPromptTokens ?? 0) - flex.cachedPromptTokens,
    usage.completionTokens - flex.completionTokens,
  );
  return (
    standard + tierCost(flexPriceOf(price), flex.promptTokens, flex.cachedPromptTokens, flex.completionTokens)
  );
}

/** The prices of the flex tier; the standard ones for a model without it (the provider bills those). */
export function flexPriceOf(price: ModelPrice): TierPrice {
  return price.flex ?? price;
}

function tierCost(price: TierPrice, prompt: number, cached: number, completion: number): number {
  // Written so that a usage without cached tokens costs exactly what `prompt·in + completion·out` gives.
  const cachedCost = cached === 0 ? 0 : cached * (price.cachedInputPerMillion ?? price.inputPerMillion);
  return (
    ((prompt - cached) * price.inputPerMillion + cachedCost + completion * price.outputPerMillion) / 1_000_000
  );
}
