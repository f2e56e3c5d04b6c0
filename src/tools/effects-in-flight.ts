// Tool calls with side effects that are still running, process-wide. A call the run stops waiting for (it was
// cancelled or timed out) keeps running to its end, recording its outcome (an email's ledger row); the worker
// waits for these before it exits, so `process.exit` never cuts an email between the SMTP reply and its record.

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
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      while (this.running.size > 0) {
        const done = await Promise.race([Promise.all(this.running).then(() => true), timeout]);
        if (!done) return false;
      }
      return true;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The process's one registry: every runToolCall of a tool not marked readOnly is tracked here. */
export const effectsInFlight = new EffectsInFlight();
