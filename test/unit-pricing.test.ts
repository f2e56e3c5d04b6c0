// Prices: the cost formula on the built-in table, and how a model's price is found or refused.
import { describe, expect, it } from 'vitest';
import { MODEL_PRICES } from '../config/prices.js';
import { ConfigError } from '../src/agent/errors.js';
import { costUsd, priceOf } from '../src/llm/pricing.js';

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
      expect(costUsd(price, 1_000_000, 0), model).toBe(price.inputPerMillion);
      expect(costUsd(price, 0, 1_000_000), model).toBe(price.outputPerMillion);
    }
    expect(costUsd(priceOf('gpt-4o'), 1_000, 500)).toBe(0.0075);
    expect(costUsd(priceOf('gpt-4-turbo'), 1_000, 1_000)).toBe(0.04);
    expect(costUsd(priceOf('gpt-4.1'), 2_000, 250)).toBe(0.006);
    expect(costUsd(priceOf('gpt-4o-mini'), 1_000_000, 1_000_000)).toBeCloseTo(0.75, 12);
    expect(costUsd(priceOf('gpt-4.1-nano'), 10_000, 10_000)).toBeCloseTo(0.005, 15);
    expect(costUsd(priceOf('gpt-4o'), 0, 0)).toBe(0);
  });

  it('is additive in tokens, to the float', () => {
    const price = priceOf('gpt-4-turbo-preview');
    expect(costUsd(price, 1_234, 567)).toBe((1_234 * 10 + 567 * 30) / 1_000_000);
  });
});

describe('priceOf', () => {
  it('knows every model of the table', () => {
    expect(Object.keys(MODEL_PRICES)).toEqual(
      expect.arrayContaining(['gpt-4-turbo', 'gpt-4-turbo-preview', 'gpt-4o', 'gpt-4o-mini', 'gpt-4.1']),
    );
    expect(priceOf('gpt-4o')).toEqual({ inputPerMillion: 2.5, outputPerMillion: 10 });
    expect(priceOf('gpt-4-turbo-preview')).toEqual({ inputPerMillion: 10, outputPerMillion: 30 });
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
