// How one model call (its attempts and retries) ended, and what it cost: what callModel returns and what a run
// observer is told. Its own module, so the observer port need not import the call itself.
import type { BudgetStopReason, TokenUsage } from './budget.js';
import type { ChatCompletion } from './chat-model.js';
import type { AgentFleetError } from './errors.js';

export interface ModelCallCharge {
  /** What this call charged the run, over all its attempts. */
  usage: TokenUsage;
  attempts: number;
  latencyMs: number;
}

export type ModelCallResult =
  | ({ ok: true; completion: ChatCompletion } & ModelCallCharge)
  | ({ ok: false; stop: BudgetStopReason | 'deadline' | 'cancelled'; message?: string } & ModelCallCharge)
  | ({ ok: false; stop: 'error'; error: AgentFleetError } & ModelCallCharge);
