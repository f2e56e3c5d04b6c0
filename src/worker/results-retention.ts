// Results nobody consumes stay on agent-results as waiting jobs, and BullMQ's removeOnComplete never sees
// them. The workers trim them: the oldest beyond the kept count, and any older than the kept age. A
// consumer that processes the results gets them removed by the same policy through removeOnComplete.
import type { Queue } from 'bullmq';
import type { Keep } from '../queue/retention.js';

/** Jobs removed per round trip of an age sweep. */
const SWEEP_BATCH = 1_000;

export class ResultsRetention {
  private timer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly results: Queue,
    private readonly keep: Keep,
    private readonly onError: (error: unknown) => void,
    /** A trim runs at most this often, and this long after the publish that asked for it. */
    private readonly debounceMs = 1_000,
    /** With nothing published, the age rule is still applied this often. */
    idleSweepMs = 3_600_000,
  ) {
    this.idleTimer = setInterval(() => this.poke(), idleSweepMs);
    this.idleTimer.unref();
  }

  /** After a publish: one trim within debounceMs, however many publishes ask for it meanwhile. */
  poke(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.trim().then(() => undefined, this.onError);
    }, this.debounceMs);
    this.timer.unref();
  }

  /** Removes waiting results beyond the kept count (oldest first) and older than the kept age. */
  async trim(): Promise<number> {
    let removed = 0;
    const excess = (await this.results.getWaitingCount()) - this.keep.count;
    // clean with a limit looks only at the oldest `limit` entries of the list; a grace of 0 takes them all.
    if (excess > 0) removed += (await this.results.clean(0, excess, 'wait')).length;
    for (;;) {
      const batch = await this.results.clean(this.keep.age * 1000, SWEEP_BATCH, 'wait');
      removed += batch.length;
      if (batch.length < SWEEP_BATCH) break;
    }
    return removed;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    clearInterval(this.idleTimer);
    this.timer = undefined;
    await this.running;
  }
}
