// Writes step traces to MySQL while the run goes, in the background and in batches, so a slow database
// never slows the loop. Each trace is parked in Redis until MySQL has it: a trace that could not be written
// (the store down, the worker killed) is written by the job's next attempt, even when that attempt only
// replays a finished run. MySQL upserts on (job, step), so writing a step twice is harmless.
import type { Redis } from 'ioredis';
import type { StepTrace } from '../agent/types.js';
import type { Logger } from '../logging/logger.js';
import type { RunsRepository } from '../store/runs-repository.js';
import { withRetries } from './retry.js';

const PARKED_TTL_SECONDS = 7 * 24 * 3600;

export class TraceWriter {
  private buffer: StepTrace[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private lastError: unknown = null;
  private readonly parkedKey: string;

  constructor(
    private readonly repository: RunsRepository,
    private readonly redis: Redis,
    prefix: string,
    private readonly jobId: string,
    private readonly logger: Logger,
  ) {
    this.parkedKey = `${prefix}:agent-traces:${jobId}`;
  }

  /** Takes back the traces an earlier attempt parked but did not write. */
  async recover(): Promise<number> {
    const parked = await this.redis.hvals(this.parkedKey);
    const traces = parked.map((raw) => JSON.parse(raw) as StepTrace).sort((a, b) => a.step - b.step);
    if (traces.length > 0) {
      this.buffer.push(...traces);
      this.flushing = this.flushing.then(() => this.writeBuffered());
    }
    return traces.length;
  }

  add(trace: StepTrace): void {
    this.buffer.push(trace);
    this.flushing = this.flushing.then(async () => {
      await this.park(trace);
      await this.writeBuffered();
    });
  }

  /** Waits for every buffered trace to be written; throws when the store stayed down through the retries. */
  async flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBuffered());
    await this.flushing;
    if (this.lastError) throw this.lastError;
  }

  private async park(trace: StepTrace): Promise<void> {
    try {
      await this.redis
        .multi()
        .hset(this.parkedKey, String(trace.step), JSON.stringify(trace))
        .expire(this.parkedKey, PARKED_TTL_SECONDS)
        .exec();
    } catch (error) {
      this.logger.warn({ err: error }, 'could not park a trace in Redis');
    }
  }

  private async writeBuffered(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      await withRetries(() => this.repository.appendSteps(this.jobId, batch), {
        attempts: 3,
        baseDelayMs: 200,
        onRetry: (err, attempt) => this.logger.warn({ err, attempt }, 'trace write failed, retrying'),
      });
      this.lastError = null;
      await this.redis.hdel(this.parkedKey, ...batch.map((trace) => String(trace.step))).catch(() => 0);
    } catch (error) {
      // Keep the batch for the final flush; if it never lands, the job's next attempt writes it.
      this.buffer = [...batch, ...this.buffer];
      this.lastError = error;
      this.logger.warn({ err: error }, 'trace write failed');
    }
  }
}
