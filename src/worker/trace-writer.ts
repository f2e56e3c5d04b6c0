// Writes a job's step traces to MySQL while the run goes, in the background and in batches shared with the other
// jobs of the process (run-journal), so a slow database never slows the loop. Each trace is parked in Redis as its
// step ends (with the step's other writes: step-writes.ts), until the job's result is out (job-state.ts): a trace
// that could not be written (the store down, the worker killed) is written by the job's next attempt, even when
// that attempt only replays a finished run. MySQL upserts on (job, step), so writing a step twice is harmless.
import type { RedisClient } from '../queue/redis.js';
import type { StepTrace } from '../kernel/types.js';
import type { Logger } from '../logging/logger.js';
import { withRetries } from './retry.js';
import type { RunJournal } from './run-journal.js';

export const PARKED_TTL_SECONDS = 7 * 24 * 3600;

/** The Redis hash of a job's traces not yet in MySQL, keyed by step. */
export const parkedTracesKey = (prefix: string, jobId: string): string => `${prefix}:agent-traces:${jobId}`;

export class TraceWriter {
  private buffer: StepTrace[] = [];
  private writing: Promise<void> = Promise.resolve();
  private lastError: unknown = null;
  private readonly parkedKey: string;

  constructor(
    private readonly sink: RunJournal,
    private readonly redis: RedisClient,
    prefix: string,
    private readonly jobId: string,
    private readonly logger: Logger,
  ) {
    this.parkedKey = parkedTracesKey(prefix, jobId);
  }

  /** Takes back the traces an earlier attempt parked but did not write. */
  async recover(): Promise<number> {
    const parked = await this.redis.hvals(this.parkedKey);
    const traces = parked.map((raw) => JSON.parse(raw) as StepTrace).sort((a, b) => a.step - b.step);
    if (traces.length > 0) {
      this.buffer.push(...traces);
      this.writing = this.writing.then(() => this.writeBuffered());
    }
    return traces.length;
  }

  /** The caller parks the trace in Redis (StepWrites.step); this writes it to MySQL. */
  add(trace: StepTrace): void {
    this.buffer.push(trace);
    this.writing = this.writing.then(() => this.writeBuffered());
  }

  /** Waits for every buffered trace to be written; throws when the store stayed down through the retries. */
  async flush(): Promise<void> {
    // The job is ending: its rows waiting in the shared batch go now, not when the batch's delay is up.
    this.sink.expedite();
    this.writing = this.writing.then(() => this.writeBuffered());
    await this.writing;
    if (this.lastError) throw this.lastError;
  }

  private async writeBuffered(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      await withRetries(() => this.sink.write(this.jobId, batch), {
        attempts: 3,
        baseDelayMs: 200,
        onRetry: (err, attempt) => this.logger.warn({ err, attempt }, 'trace write failed, retrying'),
      });
      // Left parked: the job's state goes in one command once its result is out (job-state.ts); until then a
      // retry writes it again, an upsert.
      this.lastError = null;
    } catch (error) {
      // Keep the batch for the final flush; if it never lands, the job's next attempt writes it.
      this.buffer = [...batch, ...this.buffer];
      this.lastError = error;
      this.logger.warn({ err: error }, 'trace write failed');
    }
  }
}
