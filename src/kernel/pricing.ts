// What token counts cost under a model's price. One function does it for checks and for reports, so the pre-call
// check and the reported cost can never disagree by a rounding.
import { MODEL_PRICES, type ModelPrice, type PriceFile, type TierPrice } from '../../config/prices.js';
import type { TokenUsage } from './budget.js';
import { ConfigError } from './errors.js';

export type { ModelPrice, TierPrice };

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

/** The prices configured over the built-in table: LLM_PRICES_FILE's, then LLM_PRICES' (which win). */
export function configuredPrices(env: {
  LLM_PRICES_FILE?: PriceFile | undefined;
  LLM_PRICES?: Readonly<Record<string, ModelPrice>> | undefined;
}): Readonly<Record<string, ModelPrice>> {
  return { ...(env.LLM_PRICES_FILE?.models ?? {}), ...(env.LLM_PRICES ?? {}) };
}

/**
 * The price of a model: the configured prices first (configuredPrices), then the built-in table. An unknown model
 * is refused, because a run whose cost cannot be computed cannot be bounded.
 */
export function priceOf(model: string, extraPrices: Readonly<Record<string, ModelPrice>> = {}): ModelPrice {
  const price = Object.hasOwn(extraPrices, model)
    ? extraPrices[model]
    : Object.hasOwn(MODEL_PRICES, model)
      ? MODEL_PRICES[model]
      : undefined;
  if (!price) {
    const known = [...Object.keys(MODEL_PRICES), ...Object.keys(extraPrices)].join(', ');
    throw new ConfigError(
      'unknown_model',
      `No price for model "${model}". Known models: ${known}. Configure it with LLM_PRICES_FILE or LLM_PRICES, ` +
        `e.g. LLM_PRICES='{"${model}": {"inputPerMillion": 1, "cachedInputPerMillion": 0.1, "outputPerMillion": 2}}'.`,
    );
  }
  return price;
}
