// Which price a model has: the configured prices (LLM_PRICES_FILE, LLM_PRICES) over the built-in table
// (config/prices.json). The arithmetic on a price is the kernel's (src/kernel/pricing.ts).
import { EMBEDDING_PRICES, MODEL_PRICES, type EmbeddingPrice, type PriceFile } from '../../config/prices.js';
import { ConfigError } from '../kernel/errors.js';
import type { ModelPrice } from '../kernel/pricing.js';

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

/**
 * The price of an embedding model: LLM_PRICES_FILE's `embeddingModels` first, then the built-in table. An unknown
 * one is refused at start: embeddings a run pays for must be priced, or its budget could not bound them.
 */
export function embeddingPriceOf(model: string, file?: PriceFile): EmbeddingPrice {
  const configured = file?.embeddingModels ?? {};
  const price = Object.hasOwn(configured, model)
    ? configured[model]
    : Object.hasOwn(EMBEDDING_PRICES, model)
      ? EMBEDDING_PRICES[model]
      : undefined;
  if (!price) {
    const known = [...Object.keys(EMBEDDING_PRICES), ...Object.keys(configured)].join(', ');
    throw new ConfigError(
      'unknown_model',
      `No price for embedding model "${model}" (NOTES_EMBEDDING_MODEL). Known embedding models: ${known}. ` +
        `Configure it in LLM_PRICES_FILE's "embeddingModels", e.g. {"${model}": {"inputPerMillion": 0.02}}.`,
    );
  }
  return price;
}
