// The purse a run gives its tools for calls outside its turns (embeddings: side-spend.ts). A call's worst case is
// paid when what the run has left covers it and the fleet's gate books it; it is held off the run's budget until
// settled, so calls made together cannot pay twice with the same money. A call still unsettled as the run ends (its
// tool timed out or was cancelled, its answer not in) is counted at its worst case, which its late settlement books
// with the gate; and once the run has ended, nothing more is paid.
import type { CallCost, CallGate } from './call-gate.js';
import {
  addSideSpend,
  NO_SIDE_SPEND,
  type SidePayment,
  type SidePurse,
  type SideSpend,
} from './side-spend.js';

/** What the purse needs of its run. */
export interface SidePurseHost {
  /** What the run's budget has left for a side call: after what it spent and held, and its final answer's room. */
  left(): CallCost;
  gate(): CallGate | undefined;
  /** Time the gate may wait for its booking. */
  timeLeftMs(): number;
  /** A settled call's cost, now the run's (in its state, its usage and its checkpoint). */
  spend(cost: SideSpend): void;
  /** A settlement with the gate, awaited before the run ends. */
  deferSettle(settle: Promise<void>): void;
  warn(error: unknown, message: string): void;
}

interface OpenCall {
  worst: CallCost;
  counted: boolean;
}

export class RunSidePurse implements SidePurse {
  /** Worst cases reserved by calls in flight: off the run's budget until settled. */
  private reserved: SideSpend = NO_SIDE_SPEND;
  private readonly open = new Set<OpenCall>();
  private closed = false;

  constructor(private readonly host: SidePurseHost) {}

  /** What calls in flight hold of the run's budget. */
  get held(): SideSpend {
    return this.reserved;
  }

  async reserve(worst: CallCost, signal: AbortSignal): Promise<SidePayment | null> {
    if (!(worst.tokens >= 0 && worst.costUsd >= 0)) return null;
    // A call that ended (timed out, cancelled) or a run that did: what it paid would be in no usage.
    if (signal.aborted || this.closed) return null;
    const left = this.host.left();
    if (worst.tokens > left.tokens || worst.costUsd > left.costUsd) return null;
    const call: OpenCall = { worst: { tokens: worst.tokens, costUsd: worst.costUsd }, counted: false };
    this.hold(call);
    const gate = this.host.gate();
    let ticket: string | undefined;
    if (gate) {
      try {
        const decision = await gate.acquire(worst, signal, { timeLeftMs: this.host.timeLeftMs() });
        if (!decision.ok) {
          this.unhold(call);
          return null;
        }
        ticket = decision.ticket;
      } catch (error) {
        this.unhold(call);
        this.host.warn(error, 'the fleet gate failed a side call');
        return null;
      }
    }
    let settled = false;
    return {
      settle: async (actual) => {
        if (settled) return;
        settled = true;
        // Counted at its worst case when the run ended before it settled: that is what the gate keeps too.
        const late = call.counted;
        if (!late) this.unhold(call);
        // Never more than was reserved: the reservation is what the budget and the gate agreed to.
        const tokens = late ? worst.tokens : Math.max(0, Math.min(actual.tokens, worst.tokens));
        const costUsd = late ? worst.costUsd : Math.max(0, Math.min(actual.costUsd, worst.costUsd));
        if (!late && (tokens > 0 || costUsd > 0)) this.host.spend({ calls: 1, tokens, costUsd });
        if (gate && ticket !== undefined) {
          const release = gate
            .release(ticket, { tokens, costUsd })
            .catch((error: unknown) => this.host.warn(error, 'could not settle a side call'));
          this.host.deferSettle(release);
        }
      },
    };
  }

  /** As the run ends: calls still in flight are counted at their worst case, and nothing more is paid. */
  close(): void {
    this.closed = true;
    for (const call of this.open) {
      this.unhold(call);
      call.counted = true;
      this.host.spend({ calls: 1, ...call.worst });
    }
  }

  private hold(call: OpenCall): void {
    this.open.add(call);
    this.reserved = addSideSpend(this.reserved, { calls: 1, ...call.worst });
  }

  private unhold(call: OpenCall): void {
    this.open.delete(call);
    this.reserved = addSideSpend(this.reserved, {
      calls: -1,
      tokens: -call.worst.tokens,
      costUsd: -call.worst.costUsd,
    });
  }
}
