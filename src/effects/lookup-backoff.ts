// Which effect rows' lookups failed lately, in this process: such a row is not looked up again until its wait
// (doubling with each failure, capped) is over, so rows whose lookups keep failing (a tool's API down, a hanging
// endpoint) neither fill every sweep with timeouts nor keep the rows behind them from being looked at.
// In memory: a restarted worker tries each once more, and every worker backs off on its own.

export interface LookupBackoffOptions {
  /** Wait after a first failure; doubled with each one after. Default 60 s. */
  baseMs?: number;
  /** Longest wait. Default 1 h. */
  maxMs?: number;
  /** Rows remembered; past this the ones remembered longest are forgotten (tried again). Default 1,000. */
  maxRows?: number;
  now?: () => number;
}

export class LookupBackoff {
  private readonly rows = new Map<string, { failures: number; until: number }>();
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly maxRows: number;
  private readonly now: () => number;

  constructor(options: LookupBackoffOptions = {}) {
    this.baseMs = options.baseMs ?? 60_000;
    this.maxMs = options.maxMs ?? 3_600_000;
    this.maxRows = options.maxRows ?? 1_000;
    this.now = options.now ?? Date.now;
  }

  /** The rows whose wait is not over (for the listing to leave out). */
  waiting(): string[] {
    const now = this.now();
    return [...this.rows].filter(([, row]) => row.until > now).map(([key]) => key);
  }

  failed(effectKey: string): void {
    const failures = (this.rows.get(effectKey)?.failures ?? 0) + 1;
    const waitMs = Math.min(this.baseMs * 2 ** Math.min(failures - 1, 30), this.maxMs);
    this.rows.delete(effectKey); // re-inserted last: the map's order is the order of the last failures
    this.rows.set(effectKey, { failures, until: this.now() + waitMs });
    for (const key of this.rows.keys()) {
      if (this.rows.size <= this.maxRows) break;
      this.rows.delete(key);
    }
  }

  /** The row was settled or answered: no wait any more. */
  forget(effectKey: string): void {
    this.rows.delete(effectKey);
  }
}
