// When to stop, as small pure predicates over the run so far. Each is checked BEFORE the next model call:
// a limit is never discovered after it has been crossed.
import { DEADLINE_RESERVE_MAX_MS, DEADLINE_RESERVE_SHARE } from './defaults.js';
import type { Budget } from './budget.js';
import type { StopReason } from './types.js';

export type FinalReason = 'max_steps' | 'token_budget' | 'cost_budget' | 'deadline';

export type TurnDecision =
  | { kind: 'step' }
  /** One last turn without tools that asks for the best answer from what is known. */
  | { kind: 'final'; reason: FinalReason }
  | { kind: 'stop'; reason: StopReason };

export interface RunClock {
  now: number;
  startedAt: number;
}

export function deadlineAt(budget: Budget, startedAt: number): number {
  return startedAt + budget.deadlineMs;
}

/** Time kept for the final answer turn, so a slow step cannot eat all of it. */
export function deadlineReserveMs(budget: Budget): number {
  return Math.min(budget.deadlineMs * DEADLINE_RESERVE_SHARE, DEADLINE_RESERVE_MAX_MS);
}

export const isCancelled = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;
export const isPastDeadline = (budget: Budget, clock: RunClock): boolean =>
  clock.now >= deadlineAt(budget, clock.startedAt);
export const isDeadlineNear = (budget: Budget, clock: RunClock): boolean =>
  deadlineAt(budget, clock.startedAt) - clock.now <= deadlineReserveMs(budget);
export const isStepCapReached = (budget: Budget, steps: number): boolean => steps >= budget.maxSteps;
/** The last step the cap allows is the final, tool-less one: the answer it gives still counts as a step. */
export const isLastStep = (budget: Budget, steps: number): boolean => steps === budget.maxSteps - 1;

export function decideTurn(
  budget: Budget,
  steps: number,
  clock: RunClock,
  signal?: AbortSignal,
): TurnDecision {
  if (isCancelled(signal)) return { kind: 'stop', reason: 'cancelled' };
  if (isStepCapReached(budget, steps)) return { kind: 'stop', reason: 'max_steps' };
  if (isPastDeadline(budget, clock)) return { kind: 'stop', reason: 'deadline' };
  if (isDeadlineNear(budget, clock)) return { kind: 'final', reason: 'deadline' };
  if (isLastStep(budget, steps)) return { kind: 'final', reason: 'max_steps' };
  return { kind: 'step' };
}

const FINAL_TURN_WHY: Record<FinalReason, string> = {
  max_steps: 'This is your last step.',
  token_budget: 'The token budget is nearly spent.',
  cost_budget: 'The cost budget is nearly spent.',
  deadline: 'Time is nearly up.',
};

export const finalTurnWhy = (reason: FinalReason): string => FINAL_TURN_WHY[reason];
