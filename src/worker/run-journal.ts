// One stream of MySQL writes for every job of a process: run starts and step traces wait here together and go in
// one multi-row statement each, because MySQL pays per statement (a round trip, a parse, a commit) far more than
// per row, and a worker with many jobs in flight starts a run or ends a step every few milliseconds. Writes wait
// at most `delayMs` (or until `maxRows` are waiting); each caller is told when its own rows are in; a job that is
// ending has the waiting batch written at once (`expedite`). Until then the traces stay parked in Redis
// (trace-writer); a start that never lands fails the job at its end, and BullMQ's retry writes it again.
import type { StepTrace } from '../agent/types.js';
import type { RunsRepository, StartRunInput, StepRowInput } from '../store/runs-repository.js';

interface Waiting {
  starts: StartRunInput[];
  rows: StepRowInput[];
  done: { resolve: () => void; reject: (error: unknown) => void }[];
}

const empty = (): Waiting => ({ starts: [], rows: [], done: [] });

export class RunJournal {
  private batch: Waiting = empty();
  private timer: NodeJS.Timeout | undefined;
  private expedited = false;

  constructor(
    private readonly repository: RunsRepository,
    private readonly delayMs = 50,
    private readonly maxRows = 200,
  ) {}

  /** Resolves once the run's start (`agent_runs`, status running) is in MySQL; rejects when the write failed. */
  start(input: StartRunInput): Promise<void> {
    return this.enqueue((batch) => batch.starts.push(input));
  }

  /** Resolves once these traces are in MySQL; rejects (for the whole batch) when the write failed. */
  write(jobId: string, traces: readonly StepTrace[]): Promise<void> {
    if (traces.length === 0) return Promise.resolve();
    return this.enqueue((batch) => {
      for (const trace of traces) batch.rows.push({ jobId, trace });
    });
  }

  /** Writes the waiting batch at the end of this turn of the event loop (with whatever else comes in it). */
  expedite(): void {
    if (this.expedited || this.size() === 0) return;
    this.expedited = true;
    setImmediate(() => this.flush());
  }

  private enqueue(add: (batch: Waiting) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      add(this.batch);
      this.batch.done.push({ resolve, reject });
      if (this.size() >= this.maxRows) this.expedite();
      else this.timer ??= setTimeout(() => this.flush(), this.delayMs);
    });
  }

  private size(): number {
    return this.batch.starts.length + this.batch.rows.length;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.expedited = false;
    const { starts, rows, done } = this.batch;
    if (done.length === 0) return;
    this.batch = empty();
    // Starts first: a reader never sees steps of a run it cannot find.
    (async () => {
      await this.repository.startRuns(starts);
      await this.repository.appendStepRows(rows);
    })().then(
      () => done.forEach((d) => d.resolve()),
      (error: unknown) => done.forEach((d) => d.reject(error)),
    );
  }
}
