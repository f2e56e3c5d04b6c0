// What the worker pays a run's embeddings with outside its kernel (docs/notes.md#embeddings): the opening recall's
// query, before the kernel starts, and the notes the run leaves, after it ended. A worst case is paid only when it
// fits what the purse may spend of the run's budget, and the fleet's gate (batch, tenant and daily caps) books it;
// the actual cost is settled with the gate and kept here, for the kernel's input or the result's usage.
import type { CallCost, CallGate } from '../kernel/call-gate.js';
import { addSideSpend, NO_SIDE_SPEND, type SidePayment, type SidePurse } from '../kernel/side-spend.js';
import type { SideSpend } from '../kernel/types.js';
import type { Logger } from '../logging/logger.js';

export class NotesPurse implements SidePurse {
  /** What the calls it paid cost, settled. */
  spent: SideSpend = NO_SIDE_SPEND;
  private held: CallCost = { tokens: 0, costUsd: 0 };
  private readonly settles: Promise<void>[] = [];

  constructor(
    /** The most this purse may spend, tokens and dollars: a share of the run's budget, or what is left of it. */
    private readonly limit: CallCost,
    private readonly gate: CallGate | undefined,
    private readonly log: Logger,
    /** Milliseconds a wait at the gate may take. */
    private readonly timeLeftMs: () => number,
  ) {}

  async reserve(worst: CallCost, signal: AbortSignal): Promise<SidePayment | null> {
    const tokens = this.spent.tokens + this.held.tokens + worst.tokens;
    const dollars = this.spent.costUsd + this.held.costUsd + worst.costUsd;
    if (tokens > this.limit.tokens || dollars > this.limit.costUsd) return null;
    let ticket: string | undefined;
    if (this.gate) {
      try {
        const decision = await this.gate.acquire(worst, signal, {
          timeLeftMs: Math.max(0, this.timeLeftMs()),
        });
        if (!decision.ok) return null;
        ticket = decision.ticket;
      } catch (err) {
        this.log.warn({ err }, 'the fleet gate failed an embedding: none made');
        return null;
      }
    }
    this.held = { tokens: this.held.tokens + worst.tokens, costUsd: this.held.costUsd + worst.costUsd };
    let settled = false;
    return {
      settle: async (actual) => {
        if (settled) return;
        settled = true;
        this.held = { tokens: this.held.tokens - worst.tokens, costUsd: this.held.costUsd - worst.costUsd };
        const paid = {
          tokens: Math.max(0, Math.min(actual.tokens, worst.tokens)),
          costUsd: Math.max(0, Math.min(actual.costUsd, worst.costUsd)),
        };
        if (paid.tokens > 0 || paid.costUsd > 0)
          this.spent = addSideSpend(this.spent, { calls: 1, tokens: paid.tokens, costUsd: paid.costUsd });
        if (this.gate && ticket !== undefined) {
          const release = this.gate.release(ticket, paid).catch((err: unknown) => {
            this.log.warn({ err }, 'could not settle an embedding with the fleet gate');
          });
          this.settles.push(release);
          await release;
        }
      },
    };
  }

  /** Every settlement with the gate done. */
  async settled(): Promise<void> {
    await Promise.all(this.settles);
  }
}
