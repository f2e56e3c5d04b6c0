// planCall, usageOf and addUsage with hand-made inputs, and the planning invariant over random inputs: a
// planned call's worst case never exceeds the token or the dollar budget.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addUsage,
  planCall,
  usageOf,
  type Budget,
  type CallRequirement,
  type TokenUsage,
} from '../src/kernel/budget.js';
import { costUsd, type ModelPrice } from '../src/kernel/pricing.js';

const budget = (fields: Partial<Budget> = {}): Budget => ({
  maxSteps: 8,
  maxTokens: 10_000,
  maxCostUsd: 100,
  deadlineMs: 60_000,
  ...fields,
});
const ZERO: TokenUsage = { promptTokens: 0, completionTokens: 0 };
const FREE: ModelPrice = { inputPerMillion: 0, outputPerMillion: 0 };
/** 1 USD per token either way: costs are easy to compute by hand. */
const DOLLAR: ModelPrice = { inputPerMillion: 1_000_000, outputPerMillion: 1_000_000 };
const need = (fields: Partial<CallRequirement> = {}): CallRequirement => ({
  promptTokens: 100,
  desiredMaxTokens: 512,
  minCompletionTokens: 64,
  ...fields,
});

describe('usageOf / addUsage', () => {
  it('totals tokens and prices them with costUsd', () => {
    const price = { inputPerMillion: 2.5, outputPerMillion: 10 };
    expect(usageOf({ promptTokens: 1000, completionTokens: 500 }, price)).toEqual({
      promptTokens: 1000,
      completionTokens: 500,
      totalTokens: 1500,
      costUsd: 0.0075,
    });
  });

  it('adds field by field', () => {
    expect(
      addUsage({ promptTokens: 1, completionTokens: 2 }, { promptTokens: 30, completionTokens: 40 }),
    ).toEqual({ promptTokens: 31, completionTokens: 42 });
  });
});

describe('planCall', () => {
  it('asks for the desired completion when everything fits', () => {
    expect(planCall(ZERO, budget(), FREE, need())).toEqual({ ok: true, maxTokens: 512 });
  });

  it('shrinks max_tokens to the tokens left', () => {
    // 10_000 - 9_700 used - 100 prompt = 200 left
    const used = { promptTokens: 9_000, completionTokens: 700 };
    expect(planCall(used, budget(), FREE, need())).toEqual({ ok: true, maxTokens: 200 });
  });

  it('plans exactly the minimum when exactly the minimum is left', () => {
    const used = { promptTokens: 9_836, completionTokens: 0 };
    expect(planCall(used, budget(), FREE, need())).toEqual({ ok: true, maxTokens: 64 });
  });

  it('refuses with token_budget one token below the minimum', () => {
    const used = { promptTokens: 9_837, completionTokens: 0 };
    expect(planCall(used, budget(), FREE, need())).toEqual({ ok: false, reason: 'token_budget' });
  });

  it('refuses with token_budget when the prompt alone does not fit', () => {
    expect(planCall(ZERO, budget({ maxTokens: 50 }), FREE, need())).toEqual({
      ok: false,
      reason: 'token_budget',
    });
  });

  it('shrinks max_tokens to what the dollar budget pays for', () => {
    // 1 USD per token, 300 USD: 100 prompt + 200 completion.
    expect(planCall(ZERO, budget({ maxCostUsd: 300 }), DOLLAR, need())).toEqual({ ok: true, maxTokens: 200 });
  });

  it('counts the completion tokens already used at the output price', () => {
    const price = { inputPerMillion: 0, outputPerMillion: 1_000_000 };
    // 300 USD, 150 completion tokens already paid: 150 left, whatever the prompt
    const used = { promptTokens: 5_000, completionTokens: 150 };
    expect(planCall(used, budget({ maxCostUsd: 300 }), price, need())).toEqual({ ok: true, maxTokens: 150 });
  });

  it('refuses with cost_budget when the dollars bind and the tokens do not', () => {
    expect(planCall(ZERO, budget({ maxCostUsd: 163 }), DOLLAR, need())).toEqual({
      ok: false,
      reason: 'cost_budget',
    });
    expect(planCall(ZERO, budget({ maxCostUsd: 164 }), DOLLAR, need())).toEqual({ ok: true, maxTokens: 64 });
  });

  it('refuses with cost_budget when the prompt alone costs more than is left', () => {
    expect(planCall(ZERO, budget({ maxCostUsd: 50 }), DOLLAR, need())).toEqual({
      ok: false,
      reason: 'cost_budget',
    });
  });

  it('reports token_budget when both budgets bind', () => {
    const used = { promptTokens: 9_900, completionTokens: 0 };
    expect(planCall(used, budget({ maxCostUsd: 1 }), DOLLAR, need())).toEqual({
      ok: false,
      reason: 'token_budget',
    });
  });

  it('a zero output price leaves the completion bounded by tokens only', () => {
    const price = { inputPerMillion: 1_000_000, outputPerMillion: 0 };
    expect(planCall(ZERO, budget({ maxCostUsd: 100 }), price, need())).toEqual({ ok: true, maxTokens: 512 });
    expect(planCall(ZERO, budget({ maxCostUsd: 99 }), price, need())).toEqual({
      ok: false,
      reason: 'cost_budget',
    });
  });

  it('makes a call only if its minimum leaves reserveAfter affordable, without cutting its max_tokens', () => {
    const reserveAfter = { promptTokens: 300, completionTokens: 24 };
    // tokens left after the prompt: 10_000 - 9_000 - 100 = 900; minimum 64 + reserve 324 fits: full 512
    expect(
      planCall({ promptTokens: 9_000, completionTokens: 0 }, budget(), FREE, need({ reserveAfter })),
    ).toEqual({ ok: true, maxTokens: 512 });
    // 9_500 used: 400 left; 64 + 324 = 388 fits, and the call may use all 400
    expect(
      planCall({ promptTokens: 9_500, completionTokens: 0 }, budget(), FREE, need({ reserveAfter })),
    ).toEqual({ ok: true, maxTokens: 400 });
    // dollars: 600 - 100 = 500 left; 64 + 324 fits
    expect(planCall(ZERO, budget({ maxCostUsd: 600 }), DOLLAR, need({ reserveAfter }))).toEqual({
      ok: true,
      maxTokens: 500,
    });
    // 9_600 used: 300 left; the call alone would fit, but not with the reserve
    expect(planCall({ promptTokens: 9_600, completionTokens: 0 }, budget(), FREE, need())).toEqual({
      ok: true,
      maxTokens: 300,
    });
    expect(
      planCall({ promptTokens: 9_600, completionTokens: 0 }, budget(), FREE, need({ reserveAfter })),
    ).toEqual({ ok: false, reason: 'token_budget' });
  });

  it('a call that wants less than the usual minimum only needs what it wants', () => {
    const used = { promptTokens: 9_880, completionTokens: 0 }; // 20 tokens left after the prompt
    expect(planCall(used, budget(), FREE, need({ desiredMaxTokens: 16 }))).toEqual({
      ok: true,
      maxTokens: 16,
    });
    expect(planCall(used, budget(), FREE, need({ desiredMaxTokens: 20 }))).toEqual({
      ok: true,
      maxTokens: 20,
    });
    expect(planCall(used, budget(), FREE, need({ desiredMaxTokens: 21 }))).toEqual({
      ok: false,
      reason: 'token_budget',
    });
    // with the usual 512 the minimum of 64 applies
    expect(planCall(used, budget(), FREE, need())).toEqual({ ok: false, reason: 'token_budget' });
  });

  it('a summary-style call (minimum equal to the desired size) is all or nothing', () => {
    const used = { promptTokens: 9_750, completionTokens: 0 }; // 150 left after the prompt
    const summary = need({ desiredMaxTokens: 200, minCompletionTokens: 200 });
    expect(planCall(used, budget(), FREE, summary)).toEqual({ ok: false, reason: 'token_budget' });
    expect(planCall(ZERO, budget(), FREE, summary)).toEqual({ ok: true, maxTokens: 200 });
  });

  it('never lets float rounding put the priced call above the dollar limit', () => {
    // 0.1 + 0.2 > 0.3 in floats: the closed form alone would allow one token too many here.
    const price = { inputPerMillion: 0.1, outputPerMillion: 0.2 };
    const plan = planCall(
      ZERO,
      budget({ maxTokens: 1e9, maxCostUsd: 0.3 / 1e6 }),
      price,
      need({ promptTokens: 1, desiredMaxTokens: 10, minCompletionTokens: 0 }),
    );
    expect(plan.ok).toBe(true);
    if (plan.ok)
      expect(costUsd(price, { promptTokens: 1, completionTokens: plan.maxTokens })).toBeLessThanOrEqual(
        0.3 / 1e6,
      );
  });
});

// ---- property ----------------------------------------------------------------------------------------

const price: fc.Arbitrary<ModelPrice> = fc.record({
  inputPerMillion: fc.oneof(
    fc.constant(0),
    fc.double({ min: 1e-6, max: 1e-2, noNaN: true }),
    fc.double({ min: 0.01, max: 100, noNaN: true }),
    fc.constantFrom(0.1, 0.15, 0.4, 2.5, 10),
  ),
  outputPerMillion: fc.oneof(
    fc.constant(0),
    // Tiny but not below 1e-6: see the report about tiny output prices (planCall never returns).
    fc.double({ min: 1e-6, max: 1e-2, noNaN: true }),
    fc.double({ min: 0.01, max: 200, noNaN: true }),
    fc.constantFrom(0.2, 0.6, 1.6, 8, 30),
  ),
});
const usage = (max: number) =>
  fc.record({ promptTokens: fc.nat({ max }), completionTokens: fc.nat({ max }) });
const scenario = fc.record({
  used: usage(200_000),
  budget: fc.record({
    maxSteps: fc.constant(8),
    maxTokens: fc.integer({ min: 0, max: 300_000 }),
    maxCostUsd: fc.oneof(
      fc.double({ min: 1e-6, max: 0.05, noNaN: true }),
      fc.double({ min: 0.05, max: 1000, noNaN: true }),
    ),
    deadlineMs: fc.constant(60_000),
  }),
  price,
  need: fc.record(
    {
      promptTokens: fc.nat({ max: 50_000 }),
      desiredMaxTokens: fc.integer({ min: 0, max: 4_096 }),
      minCompletionTokens: fc.nat({ max: 256 }),
      reserveAfter: usage(2_000),
    },
    { requiredKeys: ['promptTokens', 'desiredMaxTokens', 'minCompletionTokens'] },
  ),
});

describe('planCall (property)', () => {
  it('a planned call fits both budgets in its worst case; a refusal is needed and names the binding one', () => {
    let planned = 0;
    let costRefusals = 0;
    let tokenRefusals = 0;
    fc.assert(
      fc.property(scenario, ({ used, budget: b, price: p, need: n }) => {
        // The call's own worst case must fit; with a reserve, its minimum must fit together with the reserve.
        const withReserve = n.reserveAfter ? addUsage(used, n.reserveAfter) : used;
        const tokensFrom = (base: typeof used) => (completion: number) =>
          base.promptTokens + n.promptTokens + base.completionTokens + completion;
        const costFrom = (base: typeof used) => (completion: number) =>
          costUsd(p, {
            promptTokens: base.promptTokens + n.promptTokens,
            completionTokens: base.completionTokens + completion,
          });
        const tokensWith = tokensFrom(used);
        const costWith = costFrom(used);
        const min = Math.min(n.minCompletionTokens, n.desiredMaxTokens);
        const plan = planCall(used, b, p, n);
        if (plan.ok) {
          planned++;
          expect(Number.isInteger(plan.maxTokens)).toBe(true);
          expect(plan.maxTokens).toBeGreaterThanOrEqual(min);
          expect(plan.maxTokens).toBeLessThanOrEqual(n.desiredMaxTokens);
          expect(tokensWith(plan.maxTokens)).toBeLessThanOrEqual(b.maxTokens);
          expect(costWith(plan.maxTokens)).toBeLessThanOrEqual(b.maxCostUsd);
          // As large as allowed: one more token would break a limit or exceed the request.
          if (plan.maxTokens < n.desiredMaxTokens) {
            const next = plan.maxTokens + 1;
            expect(tokensWith(next) > b.maxTokens || costWith(next) > b.maxCostUsd).toBe(true);
          }
          expect(tokensFrom(withReserve)(min)).toBeLessThanOrEqual(b.maxTokens);
          expect(costFrom(withReserve)(min)).toBeLessThanOrEqual(b.maxCostUsd);
        } else {
          const tokensBind = tokensFrom(withReserve)(min) > b.maxTokens;
          const costBinds = costFrom(withReserve)(min) > b.maxCostUsd;
          expect(tokensBind || costBinds).toBe(true);
          expect(plan.reason).toBe(tokensBind ? 'token_budget' : 'cost_budget');
          if (plan.reason === 'cost_budget') costRefusals++;
          else tokenRefusals++;
        }
      }),
      { numRuns: 3_000 },
    );
    // The generator reaches every outcome.
    expect(planned).toBeGreaterThan(100);
    expect(costRefusals).toBeGreaterThan(50);
    expect(tokenRefusals).toBeGreaterThan(50);
  });
});
