// What stands between the kernel and the model endpoint beyond the run's own budget: limits shared by every
// worker of the fleet (a batch's budget, a daily cap, requests per minute). The kernel asks the gate before
// every model call with the call's worst case, and tells it afterwards what the call really cost; the worker
// supplies a gate backed by Redis. Without a gate, only the run's own budget applies.
import type { BudgetStopReason } from './budget.js';

export interface CallCost {
  tokens: number;
  costUsd: number;
}

export type GateDecision =
  | { ok: true; ticket: string }
  // 'deadline': a wait (a rate limit) that could not end before the run must answer.
  | { ok: false; reason: BudgetStopReason | 'deadline'; message: string };

export interface GateWaitLimits {
  /** Milliseconds until the run must answer: a wait that cannot end within them is given up at once. */
  timeLeftMs?: number;
}

export interface CallGate {
  /**
   * Waits for the right to call (a rate limit may make it wait) and reserves the worst case against every
   * shared budget; refuses when a shared budget cannot cover it. Throws only when the gate itself fails.
   */
  acquire(worstCase: CallCost, signal: AbortSignal, limits?: GateWaitLimits): Promise<GateDecision>;
  /** Settles a reservation with what the call cost (nothing, for a refused or failed request). */
  release(ticket: string, actual: CallCost): Promise<void>;
  /** The endpoint answered 429: the fleet should slow down, not only this call. */
  rateLimited?(retryAfterMs: number | undefined): void;
}
