// Cost of token counts under a model's price. One function does it for checks and for reports, so the
// pre-call check and the reported cost can never disagree by a rounding.
import { MODEL_PRICES, type ModelPrice } from '../../config/prices.js';
import { ConfigError } from '../agent/errors.js';

export type { ModelPrice };

export function costUsd(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  return (promptTokens * price.inputPerMillion + completionTokens * price.outputPerMillion) / 1_000_000;
}

/**
 * The price of a model: the configured extra prices (LLM_PRICES) first, then the built-in table. An unknown
 * model is refused, because a run whose cost cannot be computed cannot be bounded.
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
      `No price for model "${model}". Known models: ${known}. Configure it with LLM_PRICES, e.g. ` +
        `LLM_PRICES='{"${model}": {"inputPerMillion": 1, "outputPerMillion": 2}}'.`,
    );
  }
  return price;
}
