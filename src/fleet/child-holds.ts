// What a parent agent sets aside for a child (docs/child-agents.md#one-budget-for-the-tree): before a child job
// is enqueued, its worst case (the budget it is given) is reserved in the parent's scopes (its day, its tenant's
// day, its batch, or the parent's own hold), and the child's calls book in that hold alone. However many workers
// run the tree, the batch, daily and tenant caps see its money set aside up front and count each call once; the
// hold is settled with what the child's tree spent when it ends, and an unsettled one expires as spent.
import { createHash } from 'node:crypto';
import type { SpendLedger } from './spend-ledger.js';
import { jobScopes, type JobScopeOwner } from './fleet-gate.js';
import { holdScope } from './spend-scopes.js';
import { decodeTicket } from './spend-tickets.js';
import { MICRO_USD_PER_USD } from './spend-money.js';

/** How long past the child's deadline its hold lives unsettled: the time its result takes to go out. */
export const HOLD_MARGIN_MS = 10 * 60_000;

export interface HeldBudget {
  maxTokens: number;
  maxCostUsd: number;
}

/** A hold taken (its ticket, for the child's task), or refused by a cap of the parent's scopes (why). */
export type HoldOutcome = { ok: true; ticket: string } | { ok: false; message: string };

/**
 * The hold's id: one per child job, so a parent resumed after a crash takes the same hold, not a second; and per
 * instance of the parent's job (its creation time), so a new job that reuses the parent's id (and so its children's
 * ids) never takes an old hold, whose scope still has what the old child spent in it.
 */
export function holdIdOf(childJobId: string, parentInstance?: string): string {
  const key = parentInstance === undefined ? `hold:${childJobId}` : `hold:${childJobId}@${parentInstance}`;
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export class ChildHolds {
  constructor(
    private readonly ledger: SpendLedger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Reserves the child's budget in its parent's scopes until its deadline (and a margin). The hold's own scope has
   * no cap: the child's kernel holds it to that budget already (and its children's holds are carved from it), and a
   * capped scope would make every call of the child wait for its booking (measured: 75 ms a child call).
   */
  async take(
    parent: JobScopeOwner,
    childJobId: string,
    budget: HeldBudget,
    until: number,
    /** The instance of the parent's job (its creation time): see holdIdOf. */
    parentInstance?: string,
  ): Promise<HoldOutcome> {
    const at = this.now();
    const id = holdIdOf(childJobId, parentInstance);
    const reserved = await this.ledger.reserve(
      jobScopes(parent)(at),
      { tokens: budget.maxTokens, costUsd: budget.maxCostUsd },
      { id, ttlMs: Math.max(1, Math.ceil(until - at)) + HOLD_MARGIN_MS },
    );
    if (!reserved.ok) return { ok: false, message: reserved.message };
    return { ok: true, ticket: reserved.ticket };
  }

  /** Settles a hold with what the child's tree spent; settling it again changes nothing. */
  async release(ticket: string, spent: { totalTokens: number; costUsd: number }): Promise<void> {
    // What the hold's own scope saw counts too: calls of a child attempt that crashed after its last checkpoint are
    // not in its result's usage, but their bookings are in the hold (expired ones as spent at their worst case).
    const seen = await this.ledger.getSpend(holdScope(decodeTicket(ticket).id));
    await this.ledger.settle(ticket, {
      tokens: Math.max(spent.totalTokens, seen.usedTokens + seen.reservedTokens),
      costUsd: Math.max(spent.costUsd, (seen.usedMicroUsd + seen.reservedMicroUsd) / MICRO_USD_PER_USD),
    });
  }
}
