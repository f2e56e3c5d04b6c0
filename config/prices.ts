// The price table: data in prices.json (dated, with its source), checked here on load. A model entry is what the
// fleet must know of a model to bound and bill its runs: the per-tier prices and how requests to it are shaped.
import { z } from 'zod';
import { REASONING_EFFORTS, type ReasoningEffort } from '../src/kernel/chat-model.js';
import type { ModelPrice, TierPrice } from '../src/kernel/pricing.js';
import { agree, type Same } from '../src/util/schema-agreement.js';
import table from './prices.json' with { type: 'json' };

const perMillion = z.number().nonnegative().max(100_000);

const tierPriceSchema = z
  .object({
    inputPerMillion: perMillion,
    /** Prompt tokens served from the provider's cache; absent, they cost the input price. */
    cachedInputPerMillion: perMillion.optional(),
    outputPerMillion: perMillion,
  })
  .strict();

export const modelPriceSchema = tierPriceSchema
  .extend({
    /** The provider's slower tier at batch prices, where the model has one. */
    flex: tierPriceSchema.optional(),
    /** A reasoning model: `max_completion_tokens` instead of `max_tokens`, no temperature, `reasoning_effort`. */
    reasoning: z.boolean().optional(),
    /** The `reasoning_effort` values the model takes; with `none` among them, runs send `none` unless told otherwise. */
    reasoningEfforts: z
      .array(z.enum(REASONING_EFFORTS as [ReasoningEffort, ...ReasoningEffort[]]))
      .min(1)
      .optional(),
    /** The most tokens a prompt and its completion may hold together. */
    contextWindow: z.number().int().positive().optional(),
  })
  .strict()
  // Every call is planned at the standard, uncached prices: no other price may be higher, or a bill could
  // pass the budget that planned it.
  .superRefine((price, ctx) => {
    const above = (path: string[], value: number | undefined, limit: number, name: string) => {
      if (value !== undefined && value > limit)
        ctx.addIssue({ code: 'custom', path, message: `must be at most ${name} (${limit})` });
    };
    above(['cachedInputPerMillion'], price.cachedInputPerMillion, price.inputPerMillion, 'inputPerMillion');
    if (price.flex) {
      above(
        ['flex', 'inputPerMillion'],
        price.flex.inputPerMillion,
        price.inputPerMillion,
        'inputPerMillion',
      );
      above(
        ['flex', 'outputPerMillion'],
        price.flex.outputPerMillion,
        price.outputPerMillion,
        'outputPerMillion',
      );
      above(
        ['flex', 'cachedInputPerMillion'],
        price.flex.cachedInputPerMillion,
        price.inputPerMillion,
        'inputPerMillion',
      );
    }
  });

export type { ModelPrice, TierPrice };
// The kernel owns the types; the schema that checks a file must describe exactly them.
agree<Same<z.infer<typeof tierPriceSchema>, TierPrice>>();
agree<Same<z.infer<typeof modelPriceSchema>, ModelPrice>>();

export const priceMapSchema = z.record(z.string().min(1).max(200), modelPriceSchema);

/**
 * An embedding model's price: input tokens only (an embedding has no completion). Runs pay their embeddings
 * (notes looked up and kept by similarity, docs/notes.md) at it.
 */
export const embeddingPriceSchema = z.object({ inputPerMillion: perMillion }).strict();
export type EmbeddingPrice = z.infer<typeof embeddingPriceSchema>;

export const embeddingPriceMapSchema = z.record(z.string().min(1).max(200), embeddingPriceSchema);

/** The shape of prices.json and of a file named by LLM_PRICES_FILE. */
export const priceFileSchema = z
  .object({
    asOf: z.string().optional(),
    source: z.string().optional(),
    models: priceMapSchema,
    /** Embedding models, by name: a separate table, as they are not models a run can be given. */
    embeddingModels: embeddingPriceMapSchema.optional(),
  })
  .strict();

export type PriceFile = z.infer<typeof priceFileSchema>;

const builtIn = priceFileSchema.parse(table);

/** When the built-in prices were read, and where from. */
export const PRICES_AS_OF: string | undefined = builtIn.asOf;
export const PRICES_SOURCE: string | undefined = builtIn.source;

export const MODEL_PRICES: Readonly<Record<string, ModelPrice>> = builtIn.models;

export const EMBEDDING_PRICES: Readonly<Record<string, EmbeddingPrice>> = builtIn.embeddingModels ?? {};
