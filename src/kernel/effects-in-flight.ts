// Tool calls with side effects that are still running, process-wide. A call the run stops waiting for (it was
// cancelled or timed out) keeps running to its end, recording its outcome (an email's ledger row); the worker
// waits for these before it exits, so `process.exit` never cuts an email between the SMTP reply and its record.
import { settlesWithin } from '../util/with-timeout.js';

export class EffectsInFlight {
  private readonly running = new Set<Promise<unknown>>();

  get size(): number {
    return this.running.size;
  }

  /** Tracks `work` until it settles; returns it unchanged. */
  track<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(settled);
    void settled.then(() => this.running.delete(settled));
    return work;
  }

  /** Resolves true once nothing is running, or false when `timeoutMs` passes first. */
  async settled(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    // Calls may start while others settle: wait until none is left, all within the one time limit.
    while (this.running.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0 || !(await settlesWithin(Promise.all(this.running), left))) return false;
    }
    return true;
  }
}

/** The process's one registry: every runToolCall of a tool not marked readOnly is tracked here. */
export const effectsInFlight = new EffectsInFlight();
