// Writes a job makes for others to read (its progress, its log lines): the run does not wait for them between
// steps, since no resume depends on them, but the job waits for all of them before it ends, so what it shows
// is complete by the time its result is out. A failure is logged, as the kernel logs a failing observer.
import type { Logger } from '../logging/logger.js';

export class Background {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  run(what: string, work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      (error: unknown) => this.logger.warn({ err: error }, `${what} failed`),
    );
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
  }

  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }
}
