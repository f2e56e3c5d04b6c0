// Approvals on /metrics: how many calls wait for a person fleet-wide and for how long the oldest has, read from the
// store on scrape, and the decisions resumed runs applied, by outcome (docs/operations.md#approvals-on-metrics).
//
// The store is read with a time limit and one read in flight at most, as the queue depths are: a slow or down
// MySQL never hangs or fails a scrape. A scrape it misses keeps the LAST values read, and
// agentfleet_approvals_scrape_errors_total counts the miss: an alert on the age holds through a database blip
// instead of resolving and firing again, and the error counter says the figure is stale. Before the first read
// that succeeds the gauges are NaN, never a made-up 0 ("nobody waits") that an alert would read as all clear.
import { Counter, Gauge, type Registry } from 'prom-client';
import { withTimeout } from '../util/with-timeout.js';

/** What the gauges read: ApprovalStore.pendingStats fits (src/approvals/approval-store.ts). */
export interface PendingApprovalsSource {
  pendingStats(now: Date): Promise<{ count: number; oldestAgeSeconds: number }>;
}

/** The decision label: as the trace events and the wait spans name it. */
type ApprovalDecisionLabel = 'approve' | 'reject' | 'expire';

/** An approval's final state, by the decision that put it there; a pending one is no decision. */
const DECISION_OF_STATE: Readonly<Record<string, ApprovalDecisionLabel>> = {
  approved: 'approve',
  rejected: 'reject',
  expired: 'expire',
};

export const DEFAULT_APPROVALS_TIMEOUT_MS = 500;

type Stats = Awaited<ReturnType<PendingApprovalsSource['pendingStats']>>;

export class ApprovalMetrics {
  private readonly decisions: Counter<'decision'>;
  private watched:
    { source: PendingApprovalsSource; pending: Gauge; oldest: Gauge; errors: Counter } | undefined;
  /** The read a scrape waits for; one that outlives its scrape is waited for by the next, never doubled. */
  private inflight: Promise<Stats> | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly prefix: string,
    private readonly timeoutMs: number = DEFAULT_APPROVALS_TIMEOUT_MS,
  ) {
    this.decisions = new Counter({
      name: `${prefix}approval_decisions_total`,
      help: 'Decisions on calls that waited for approval, as resumed runs applied them: approve, reject or expire.',
      labelNames: ['decision'] as const,
      registers: [registry],
    });
    // Present from the first scrape, so rate() and increase() see every series before its first decision.
    for (const decision of Object.values(DECISION_OF_STATE)) this.decisions.inc({ decision }, 0);
  }

  /**
   * Reports the pending approvals of `source` on every scrape, from now on: a process that reads no store shows
   * no gauge rather than a NaN for ever. Once per process.
   */
  watch(source: PendingApprovalsSource): void {
    if (this.watched) throw new Error('pending approvals are already watched');
    const registers = [this.registry];
    const collect = () => this.refresh();
    const pending = new Gauge({
      name: `${this.prefix}approvals_pending`,
      help: 'Calls waiting for a decision, fleet-wide (one past its expiry waits no more), read from the store on scrape.',
      registers,
      collect,
    });
    const oldest = new Gauge({
      name: `${this.prefix}approvals_oldest_pending_seconds`,
      help: 'How long the oldest call still waiting for a decision has waited, in seconds (0 when none waits), read on scrape.',
      registers,
      collect,
    });
    const errors = new Counter({
      name: `${this.prefix}approvals_scrape_errors_total`,
      help: 'Scrapes whose read of pending approvals failed or took too long: the approvals gauges kept their last values.',
      registers,
      // Waits for the scrape's read too, whatever order prom-client collects in: a miss shows in its own scrape.
      collect,
    });
    pending.set(Number.NaN);
    oldest.set(Number.NaN);
    this.watched = { source, pending, oldest, errors };
  }

  /** Counts the decisions a resumed run applies (ApprovalParking.decisionsFor's `decided`); pending ones are skipped. */
  observeDecisions(decided: readonly { state: string }[]): void {
    for (const { state } of decided) {
      const decision = DECISION_OF_STATE[state];
      if (decision) this.decisions.inc({ decision });
    }
  }

  /** One read per scrape, however many of the metrics wait for it. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.read().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async read(): Promise<void> {
    const watched = this.watched;
    if (!watched) return;
    let stats: Stats;
    try {
      stats = await withTimeout(this.statsOf(watched.source), this.timeoutMs);
    } catch {
      watched.errors.inc();
      return;
    }
    watched.pending.set(countOrNaN(stats.count));
    watched.oldest.set(countOrNaN(stats.oldestAgeSeconds));
  }

  private statsOf(source: PendingApprovalsSource): Promise<Stats> {
    if (!this.inflight) {
      // Called in a then: a source that throws at once is a failed read like any other.
      const request = Promise.resolve()
        .then(() => source.pendingStats(new Date()))
        .finally(() => {
          this.inflight = undefined;
        });
      // A read outliving its scrape may still fail: that failure is already counted.
      request.catch(() => undefined);
      this.inflight = request;
    }
    return this.inflight;
  }
}

/** A count or an age as the gauge shows it: a value that is neither is unknown, not 0. */
function countOrNaN(value: number): number {
  return Number.isFinite(value) && value >= 0 ? value : Number.NaN;
}
