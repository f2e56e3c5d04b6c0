// Prices: the cost formula on the built-in table, and how a model's price is found or refused.
import { describe, expect, it } from 'vitest';
import { MODEL_PRICES, PRICES_AS_OF, PRICES_SOURCE } from '../../../config/prices.js';
import { ConfigError } from '../../../src/kernel/errors.js';
import { costUsd } from '../../../src/kernel/pricing.js';
import { configuredPrices, priceOf } from '../../../src/llm/price-table.js';
import { parseEnv } from '../../../config/env.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('costUsd', () => {
  it('is exact for round token counts of the table', () => {
    // 1M prompt + 1M completion tokens cost input + output per million
    for (const [model, price] of Object.entries(MODEL_PRICES)) {
      expect(costUsd(price, { promptTokens: 1_000_000, completionTokens: 0 }), model).toBe(
        price.inputPerMillion,
      );
      expect(costUsd(price, { promptTokens: 0, completionTokens: 1_000_000 }), model).toBe(
        price.outputPerMillion,
      );
    }
    expect(costUsd(priceOf('gpt-4o'), { promptTokens: 1_000, completionTokens: 500 })).toBe(0.0075);
    expect(costUsd(priceOf('gpt-4-turbo'), { promptTokens: 1_000, completionTokens: 1_000 })).toBe(0.04);
    expect(costUsd(priceOf('gpt-4.1'), { promptTokens: 2_000, completionTokens: 250 })).toBe(0.006);
    expect(
      costUsd(priceOf('gpt-4o-mini'), { promptTokens: 1_000_000, completionTokens: 1_000_000 }),
    ).toBeCloseTo(0.75, 12);
    expect(costUsd(priceOf('gpt-4.1-nano'), { promptTokens: 10_000, completionTokens: 10_000 })).toBeCloseTo(
      0.005,
      15,
    );
    expect(costUsd(priceOf('gpt-4o'), { promptTokens: 0, completionTokens: 0 })).toBe(0);
  });

  it('is additive in tokens, to the float', () => {
    const price = priceOf('gpt-4-turbo-preview');
    expect(costUsd(price, { promptTokens: 1_234, completionTokens: 567 })).toBe(
      (1_234 * 10 + 567 * 30) / 1_000_000,
    );
  });
});

describe('costUsd of cached and flex tokens', () => {
  const gpt41 = priceOf('gpt-4.1'); // input $2, cached $0.50, output $8 per million
  it('bills cached prompt tokens at the cached-input price', () => {
    expect(
      costUsd(gpt41, { promptTokens: 10_000, cachedPromptTokens: 8_192, completionTokens: 100 }),
    ).toBeCloseTo((1_808 * 2 + 8_192 * 0.5 + 100 * 8) / 1e6, 15);
    // Reasoning tokens are completion tokens: they change nothing in the bill.
    const plain = costUsd(gpt41, { promptTokens: 1_000, completionTokens: 500 });
    expect(costUsd(gpt41, { promptTokens: 1_000, completionTokens: 500, reasoningTokens: 400 })).toBe(plain);
  });

  it('bills cached tokens at the input price for a model without a cached price', () => {
    const price = { inputPerMillion: 3, outputPerMillion: 6 };
    expect(costUsd(price, { promptTokens: 1_000, cachedPromptTokens: 600, completionTokens: 0 })).toBe(0.003);
  });

  it('bills the flex part at the flex prices, the rest at the standard ones', () => {
    const gpt5 = priceOf('gpt-5');
    const cost = costUsd(gpt5, {
      promptTokens: 3_000,
      cachedPromptTokens: 1_024,
      completionTokens: 700,
      flex: { promptTokens: 2_000, cachedPromptTokens: 1_024, completionTokens: 500 },
    });
    const standard = (1_000 * 1.25 + 200 * 10) / 1e6;
    const flex = ((2_000 - 1_024) * 0.625 + 1_024 * 0.0625 + 500 * 5) / 1e6;
    expect(cost).toBeCloseTo(standard + flex, 15);
  });
});

describe('LLM_PRICES_FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prices-'));
  it('adds and overrides models from a file of the built-in shape; LLM_PRICES wins over it', () => {
    const file = join(dir, 'prices.json');
    writeFileSync(
      file,
      JSON.stringify({
        asOf: '2026-12-01',
        models: {
          'llama-3.3-70b': { inputPerMillion: 0, outputPerMillion: 0 },
          'gpt-4.1': { inputPerMillion: 1, cachedInputPerMillion: 0.25, outputPerMillion: 4 },
          'gpt-4o': { inputPerMillion: 9, outputPerMillion: 9 },
        },
      }),
    );
    const env = parseEnv({
      LLM_PRICES_FILE: file,
      LLM_PRICES: JSON.stringify({ 'gpt-4o': { inputPerMillion: 2, outputPerMillion: 4 } }),
    });
    const prices = configuredPrices(env);
    expect(priceOf('llama-3.3-70b', prices)).toEqual({ inputPerMillion: 0, outputPerMillion: 0 });
    expect(priceOf('gpt-4.1', prices).cachedInputPerMillion).toBe(0.25);
    expect(priceOf('gpt-4o', prices)).toEqual({ inputPerMillion: 2, outputPerMillion: 4 });
    expect(priceOf('o3', prices)).toEqual(MODEL_PRICES['o3']);
  });

  it('refuses a cached or flex price above the standard one: the budget plans every call at the standard price', () => {
    const entry = (extra: object) =>
      JSON.stringify({ m: { inputPerMillion: 1, outputPerMillion: 2, ...extra } });
    expect(() => parseEnv({ LLM_PRICES: entry({ cachedInputPerMillion: 1.5 }) })).toThrow(
      /LLM_PRICES=.*m\.cachedInputPerMillion: must be at most inputPerMillion/,
    );
    expect(() =>
      parseEnv({ LLM_PRICES: entry({ flex: { inputPerMillion: 0.5, outputPerMillion: 3 } }) }),
    ).toThrow(/m\.flex\.outputPerMillion: must be at most outputPerMillion/);
    expect(() => parseEnv({ LLM_PRICES: entry({ cachedInputPerMillion: 0.1 }) })).not.toThrow();
  });

  it('refuses a missing file, bad JSON and a bad entry, naming the variable and the field', () => {
    expect(() => parseEnv({ LLM_PRICES_FILE: join(dir, 'nope.json') })).toThrow(
      /LLM_PRICES_FILE=.*cannot be read/,
    );
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ "models": ');
    expect(() => parseEnv({ LLM_PRICES_FILE: bad })).toThrow(/LLM_PRICES_FILE=.*is not JSON/);
    writeFileSync(bad, JSON.stringify({ models: { m: { inputPerMillion: -1, outputPerMillion: 1 } } }));
    expect(() => parseEnv({ LLM_PRICES_FILE: bad })).toThrow(/LLM_PRICES_FILE=.*models\.m\.inputPerMillion/);
    expect(() =>
      parseEnv({
        LLM_PRICES: JSON.stringify({ m: { inputPerMillion: 1, outputPerMillion: 1, flex: { x: 1 } } }),
      }),
    ).toThrow(/LLM_PRICES=.*m\.flex/);
    expect(() =>
      parseEnv({
        LLM_PRICES: JSON.stringify({
          m: { inputPerMillion: 1, outputPerMillion: 1, reasoningEfforts: ['extreme'] },
        }),
      }),
    ).toThrow(/LLM_PRICES=.*m\.reasoningEfforts\.0/);
  });
});

describe('priceOf', () => {
  it('knows every model of the table', () => {
    expect(Object.keys(MODEL_PRICES)).toEqual(
      expect.arrayContaining(['gpt-4-turbo', 'gpt-4-turbo-preview', 'gpt-4o', 'gpt-4o-mini', 'gpt-4.1']),
    );
    expect(priceOf('gpt-4o')).toMatchObject({
      inputPerMillion: 2.5,
      cachedInputPerMillion: 1.25,
      outputPerMillion: 10,
    });
    expect(priceOf('gpt-4-turbo-preview')).toMatchObject({ inputPerMillion: 10, outputPerMillion: 30 });
    // The current models (issue: today's models), with their cached and flex prices where they have them.
    for (const model of [
      'gpt-5',
      'gpt-5-mini',
      'gpt-5-nano',
      'o3',
      'o4-mini',
      'gpt-4.1-mini',
      'gpt-4.1-nano',
    ])
      expect(priceOf(model).cachedInputPerMillion, model).toBeGreaterThan(0);
    expect(priceOf('gpt-5').flex).toEqual({
      inputPerMillion: 0.625,
      cachedInputPerMillion: 0.0625,
      outputPerMillion: 5,
    });
    expect(priceOf('o3')).toMatchObject({ reasoning: true, contextWindow: 200_000 });
    // The gpt-5.4 family and gpt-5.5 (OpenAI's pricing page, checked 2026-12-06): standard, cached, flex at half.
    expect(priceOf('gpt-5.4-mini')).toEqual({
      inputPerMillion: 0.75,
      cachedInputPerMillion: 0.075,
      outputPerMillion: 4.5,
      flex: { inputPerMillion: 0.375, cachedInputPerMillion: 0.0375, outputPerMillion: 2.25 },
      reasoning: true,
      reasoningEfforts: ['none', 'low', 'medium', 'high', 'xhigh'],
      contextWindow: 400_000,
    });
    expect(priceOf('gpt-5.4-nano')).toMatchObject({ inputPerMillion: 0.2, outputPerMillion: 1.25 });
    expect(priceOf('gpt-5.4')).toMatchObject({
      inputPerMillion: 2.5,
      outputPerMillion: 15,
      contextWindow: 1_050_000,
    });
    expect(priceOf('gpt-5.5')).toMatchObject({
      inputPerMillion: 5,
      cachedInputPerMillion: 0.5,
      outputPerMillion: 30,
    });
    // Every reasoning model says which efforts it takes; the others do not reason.
    for (const [model, price] of Object.entries(MODEL_PRICES))
      expect(price.reasoningEfforts !== undefined, model).toBe(price.reasoning === true);
    expect(priceOf('gpt-5-mini').reasoningEfforts).not.toContain('none');
    expect(PRICES_AS_OF).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(PRICES_SOURCE).toContain('openai.com');
  });

  it('refuses an unknown model with a ConfigError that points to LLM_PRICES', () => {
    const error = configErrorOf(() => priceOf('gpt-9-ultra'));
    expect(error.code).toBe('unknown_model');
    expect(error.kind).toBe('config');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('"gpt-9-ultra"');
    expect(error.message).toContain('LLM_PRICES');
    expect(error.message).toContain('gpt-4o');
  });

  it('an Object.prototype property is not a model', () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'])
      expect(configErrorOf(() => priceOf(name)).code, name).toBe('unknown_model');
    expect(configErrorOf(() => priceOf('constructor', {})).code).toBe('unknown_model');
  });

  it('extra prices add models and override the table', () => {
    const extra = {
      'local-llama': { inputPerMillion: 0, outputPerMillion: 0 },
      'gpt-4o': { inputPerMillion: 1, outputPerMillion: 2 },
    };
    expect(priceOf('local-llama', extra)).toEqual({ inputPerMillion: 0, outputPerMillion: 0 });
    expect(priceOf('gpt-4o', extra)).toEqual({ inputPerMillion: 1, outputPerMillion: 2 });
    expect(priceOf('gpt-4.1', extra)).toEqual(MODEL_PRICES['gpt-4.1']);
    const error = configErrorOf(() => priceOf('other', extra));
    expect(error.message).toContain('local-llama');
  });
});
