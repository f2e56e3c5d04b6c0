// What a parent agent sets aside for a child (docs/child-agents.md#one-budget-for-the-tree): before a child job
// is enqueued, its worst case (the budget it is given) is reserved in the parent's scopes (its day, its tenant's
// day, its batch, or the parent's own hold), and the child's calls book in that hold alone. However many workers
// run the tree, the batch, daily and tenant caps see its money set aside up front and count each call once; the
// hold is settled with what the child's tree spent when it ends, and an unsettled one expires as spent.
import { createHash } from 'node:crypto';
import type { SpendLedger } from './spend-ledger.js';
import { jobScopes, type JobScopeOwner } from './fleet-gate.js';
import { holdScope } from './spend-scopes.js';

/** How long past the child's deadline its hold lives unsettled: the time its result takes to go out. */
export const HOLD_MARGIN_MS = 10 * 60_000;

export interface HeldBudget {
  maxTokens: number;
  maxCostUsd: number;
}

/** A hold taken (its ticket, for the child's task), or refused by a cap of the parent's scopes (why). */
export type HoldOutcome = { ok: true; ticket: string } | { ok: false; message: string };

/** The hold's id: one per child job, so a parent resumed after a crash takes the same hold, not a second. */
export function holdIdOf(childJobId: string): string {
  const h = createHash('sha256').update(`hold:${childJobId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export class ChildHolds {
  constructor(
    private readonly ledger: SpendLedger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reserves the child's budget in its parent's scopes until its deadline (and a margin), capping its hold. */
  async take(
    parent: JobScopeOwner,
    childJobId: string,
    budget: HeldBudget,
    until: number,
  ): Promise<HoldOutcome> {
    const at = this.now();
    const id = holdIdOf(childJobId);
    const reserved = await this.ledger.reserve(
      jobScopes(parent)(at),
      { tokens: budget.maxTokens, costUsd: budget.maxCostUsd },
      { id, ttlMs: Math.max(1, Math.ceil(until - at)) + HOLD_MARGIN_MS },
    );
    if (!reserved.ok) return { ok: false, message: reserved.message };
    await this.ledger.setCaps(holdScope(id), budget);
    return { ok: true, ticket: reserved.ticket };
  }

  /** Settles a hold with what the child's tree spent; settling it again changes nothing. */
  async release(ticket: string, spent: { totalTokens: number; costUsd: number }): Promise<void> {
    await this.ledger.settle(ticket, { tokens: spent.totalTokens, costUsd: spent.costUsd });
  }
}
