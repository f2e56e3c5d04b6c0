// decideTurn branch by branch, and the priority between branches when several apply at once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Budget } from '../src/kernel/budget.js';
import { DEADLINE_RESERVE_MAX_MS, DEADLINE_RESERVE_SHARE } from '../src/kernel/defaults.js';
import {
  deadlineAt,
  deadlineReserveMs,
  decideTurn,
  finalTurnWhy,
  isDeadlineNear,
  isLastStep,
  isPastDeadline,
  isStepCapReached,
  type TurnDecision,
} from '../src/kernel/stop-conditions.js';

// deadline 10 s: reserve 1.5 s (15 %), so the final turn starts at 8.5 s after the start
const budget: Budget = { maxSteps: 5, maxTokens: 10_000, maxCostUsd: 1, deadlineMs: 10_000 };
const START = 1_000_000;
const at = (elapsedMs: number) => ({ startedAt: START, now: START + elapsedMs });
const cancelled = () => {
  const controller = new AbortController();
  controller.abort();
  return controller.signal;
};

describe('deadline helpers', () => {
  it('the deadline counts from the start', () => {
    expect(deadlineAt(budget, START)).toBe(START + 10_000);
  });

  it('the reserve is a share of the deadline, capped', () => {
    expect(DEADLINE_RESERVE_SHARE).toBe(0.15);
    expect(deadlineReserveMs(budget)).toBe(1_500);
    expect(deadlineReserveMs({ ...budget, deadlineMs: 300_000 })).toBe(DEADLINE_RESERVE_MAX_MS);
    expect(deadlineReserveMs({ ...budget, deadlineMs: 0 })).toBe(0);
  });

  it('past and near the deadline, at the boundaries', () => {
    expect(isPastDeadline(budget, at(9_999))).toBe(false);
    expect(isPastDeadline(budget, at(10_000))).toBe(true);
    expect(isDeadlineNear(budget, at(8_499))).toBe(false);
    expect(isDeadlineNear(budget, at(8_500))).toBe(true);
  });

  it('the step cap and the last step', () => {
    expect(isStepCapReached(budget, 4)).toBe(false);
    expect(isStepCapReached(budget, 5)).toBe(true);
    expect(isStepCapReached(budget, 6)).toBe(true);
    expect(isLastStep(budget, 3)).toBe(false);
    expect(isLastStep(budget, 4)).toBe(true);
    expect(isLastStep(budget, 5)).toBe(false);
  });
});

describe('decideTurn', () => {
  it('step: early in the run', () => {
    expect(decideTurn(budget, 0, at(0))).toEqual({ kind: 'step' });
    expect(decideTurn(budget, 3, at(8_499), new AbortController().signal)).toEqual({ kind: 'step' });
  });

  it('final max_steps: the last step the cap allows', () => {
    expect(decideTurn(budget, 4, at(0))).toEqual({ kind: 'final', reason: 'max_steps' });
  });

  it('a one-step budget goes straight to the final turn', () => {
    expect(decideTurn({ ...budget, maxSteps: 1 }, 0, at(0))).toEqual({ kind: 'final', reason: 'max_steps' });
  });

  it('final deadline: within the reserve before the deadline', () => {
    expect(decideTurn(budget, 1, at(8_500))).toEqual({ kind: 'final', reason: 'deadline' });
    expect(decideTurn(budget, 1, at(9_999))).toEqual({ kind: 'final', reason: 'deadline' });
  });

  it('stop deadline: at or past the deadline', () => {
    expect(decideTurn(budget, 1, at(10_000))).toEqual({ kind: 'stop', reason: 'deadline' });
    expect(decideTurn(budget, 1, at(50_000))).toEqual({ kind: 'stop', reason: 'deadline' });
  });

  it('stop max_steps: the cap is reached', () => {
    expect(decideTurn(budget, 5, at(0))).toEqual({ kind: 'stop', reason: 'max_steps' });
  });

  it('stop cancelled: the signal is aborted', () => {
    expect(decideTurn(budget, 0, at(0), cancelled())).toEqual({ kind: 'stop', reason: 'cancelled' });
  });

  it('priority: cancelled > cap reached > past deadline > deadline near > last step > step', () => {
    expect(decideTurn(budget, 5, at(20_000), cancelled())).toEqual({ kind: 'stop', reason: 'cancelled' });
    expect(decideTurn(budget, 5, at(20_000))).toEqual({ kind: 'stop', reason: 'max_steps' });
    expect(decideTurn(budget, 4, at(10_000))).toEqual({ kind: 'stop', reason: 'deadline' });
    expect(decideTurn(budget, 4, at(9_000))).toEqual({ kind: 'final', reason: 'deadline' });
    expect(decideTurn(budget, 4, at(1_000))).toEqual({ kind: 'final', reason: 'max_steps' });
  });

  it('agrees with the priority list over random states (property)', () => {
    const expected = (steps: number, elapsed: number, aborted: boolean, b: Budget): TurnDecision => {
      if (aborted) return { kind: 'stop', reason: 'cancelled' };
      if (steps >= b.maxSteps) return { kind: 'stop', reason: 'max_steps' };
      if (elapsed >= b.deadlineMs) return { kind: 'stop', reason: 'deadline' };
      if (b.deadlineMs - elapsed <= Math.min(b.deadlineMs * 0.15, 10_000))
        return { kind: 'final', reason: 'deadline' };
      if (steps === b.maxSteps - 1) return { kind: 'final', reason: 'max_steps' };
      return { kind: 'step' };
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.nat({ max: 25 }),
        fc.integer({ min: 1_000, max: 200_000 }),
        fc.integer({ min: -10, max: 250_000 }),
        fc.boolean(),
        (maxSteps, steps, deadlineMs, elapsed, aborted) => {
          const b = { ...budget, maxSteps, deadlineMs };
          const signal = aborted ? cancelled() : undefined;
          expect(decideTurn(b, steps, at(elapsed), signal)).toEqual(expected(steps, elapsed, aborted, b));
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('finalTurnWhy', () => {
  it('has a sentence for every final reason', () => {
    expect(finalTurnWhy('max_steps')).toBe('This is your last step.');
    expect(finalTurnWhy('token_budget')).toMatch(/token budget/);
    expect(finalTurnWhy('cost_budget')).toMatch(/cost budget/);
    expect(finalTurnWhy('deadline')).toMatch(/Time/);
  });
});
