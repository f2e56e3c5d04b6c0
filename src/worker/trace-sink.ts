// One INSERT for the step traces of every job of a process: MySQL pays per statement far more than per row, and a
// worker with many jobs in flight produces a trace every few milliseconds. Traces wait here at most `delayMs`
// (or until `maxRows` are waiting), each job's writer is told when its own rows are in, and a job that is ending
// has the waiting batch written at once (`expedite`). Until then the traces stay parked in Redis (trace-writer).
import type { StepTrace } from '../agent/types.js';
import type { RunsRepository, StepRowInput } from '../store/runs-repository.js';

interface Waiting {
  rows: StepRowInput[];
  done: { resolve: () => void; reject: (error: unknown) => void }[];
}

export class TraceSink {
  private batch: Waiting = { rows: [], done: [] };
  private timer: NodeJS.Timeout | undefined;
  private expedited = false;

  constructor(
    private readonly repository: RunsRepository,
    private readonly delayMs = 50,
    private readonly maxRows = 200,
  ) {}

  /** Resolves once these traces are in MySQL; rejects (for the whole batch) when the INSERT failed. */
  write(jobId: string, traces: readonly StepTrace[]): Promise<void> {
    if (traces.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      for (const trace of traces) this.batch.rows.push({ jobId, trace });
      this.batch.done.push({ resolve, reject });
      if (this.batch.rows.length >= this.maxRows) this.expedite();
      else this.timer ??= setTimeout(() => this.flush(), this.delayMs);
    });
  }

  /** Writes the waiting batch at the end of this turn of the event loop (with whatever else comes in it). */
  expedite(): void {
    if (this.expedited || this.batch.rows.length === 0) return;
    this.expedited = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.expedited = false;
    const { rows, done } = this.batch;
    if (rows.length === 0) return;
    this.batch = { rows: [], done: [] };
    this.repository.appendStepRows(rows).then(
      () => done.forEach((d) => d.resolve()),
      (error: unknown) => done.forEach((d) => d.reject(error)),
    );
  }
}
