// Writes step traces to MySQL while the run goes, in the background and in batches, so a slow database
// never slows the loop and a crashed run's trace survives up to its last flushed step. A resumed run
// re-reports steps idempotently (the repository upserts on job and step).
import type { StepTrace } from '../agent/types.js';
import type { Logger } from '../logging/logger.js';
import type { RunsRepository } from '../store/runs-repository.js';
import { withRetries } from './retry.js';

export class TraceWriter {
  private buffer: StepTrace[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private lastError: unknown = null;

  constructor(
    private readonly repository: RunsRepository,
    private readonly jobId: string,
    private readonly logger: Logger,
  ) {}

  add(trace: StepTrace): void {
    this.buffer.push(trace);
    this.flushing = this.flushing.then(() => this.writeBuffered());
  }

  /** Waits for every buffered trace to be written; throws when the store stayed down through the retries. */
  async flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBuffered());
    await this.flushing;
    if (this.lastError) throw this.lastError;
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
    } catch (error) {
      // Keep the batch for the final flush; the job fails over to BullMQ's retry if it never lands.
      this.buffer = [...batch, ...this.buffer];
      this.lastError = error;
      this.logger.warn({ err: error }, 'trace write failed');
    }
  }
}
