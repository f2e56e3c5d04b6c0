// Requests made in the same turn of the event loop, grouped by a key and handed over together at its end
// (setImmediate: after the turn's I/O callbacks and promise reactions). The calls of one model reply start in
// the same turn, so their claims on the effect ledger leave in one query instead of one each; a request waits
// at most for the end of the turn that made it.

export interface Pending<T, R> {
  request: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class SameTurnBatches<T, R> {
  private waiting = new Map<string, Pending<T, R>[]>();
  private scheduled = false;

  /** `run` answers every request of a group (resolve or reject each); a throw rejects those it left. */
  constructor(private readonly run: (group: Pending<T, R>[]) => Promise<void>) {}

  add(key: string, request: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const group = this.waiting.get(key);
      if (group) group.push({ request, resolve, reject });
      else this.waiting.set(key, [{ request, resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.handOver());
      }
    });
  }

  private handOver(): void {
    const groups = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    for (const group of groups.values()) {
      // A promise settles once: rejecting the answered ones as well is harmless.
      this.run(group).catch((error: unknown) => group.forEach((pending) => pending.reject(error)));
    }
  }
}
