// A step's Redis writes in one round trip: the checkpoint the kernel took with it, the trace parked until MySQL
// has it (trace-writer.ts), the progress a watcher reads (with BullMQ's `progress` event) and the job's log line.
// The kernel hands the checkpoint and the trace over in the same turn of the event loop; whatever a turn hands
// over leaves at its end, in one script, instead of four commands a step. A checkpoint's promise resolves once
// its script ran: the kernel awaits it where a checkpoint must be durable (before side effects, at the end).
import type { Job } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import type { StepTrace } from '../kernel/types.js';
import { LuaScript } from '../fleet/lua-script.js';
import type { Logger } from '../logging/logger.js';
import { checkpointKey, CHECKPOINT_TTL_SECONDS } from './checkpoint-store.js';
import { progressOf, stepLogLine } from './progress.js';
import { PARKED_TTL_SECONDS, parkedTracesKey } from './trace-writer.js';

// KEYS: job hash, queue events stream, queue meta, job logs, checkpoint, parked traces.
// ARGV: job id, progress JSON, log line, logs kept ('' = all), checkpoint JSON, checkpoint TTL, trace step,
//       trace JSON, parked TTL. An empty value skips its write. Progress and log as BullMQ's updateProgress and
//       addLog scripts write them, and only while the job exists, as they do.
const STEP = LuaScript.fromFiles(new URL('./step-write.lua', import.meta.url));

interface Pending {
  checkpoint: string | null;
  trace: StepTrace | null;
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
}

export class StepWrites {
  private pending: Pending | null = null;
  private inFlight = new Set<Promise<unknown>>();
  private readonly keys: string[];

  constructor(
    private readonly redis: RedisClient,
    private readonly job: Pick<Job, 'id' | 'queueQualifiedName' | 'opts'>,
    prefix: string,
    private readonly logger: Logger,
  ) {
    const jobId = String(job.id);
    const queueKey = job.queueQualifiedName;
    this.keys = [
      `${queueKey}:${jobId}`,
      `${queueKey}:events`,
      `${queueKey}:meta`,
      `${queueKey}:${jobId}:logs`,
      checkpointKey(prefix, jobId),
      parkedTracesKey(prefix, jobId),
    ];
  }

  /** The kernel's checkpoint (Checkpoint.json): written with whatever else this turn hands over. */
  checkpoint(json: string): Promise<void> {
    const pending = this.take();
    pending.checkpoint = json;
    return new Promise((resolve, reject) => pending.waiters.push({ resolve, reject }));
  }

  /** A step's trace: parked, and shown as the job's progress and log line. Failures are logged, not thrown. */
  step(trace: StepTrace): void {
    const pending = this.take();
    if (pending.trace) this.send({ checkpoint: null, trace: pending.trace, waiters: [] }); // two steps in one turn
    pending.trace = trace;
  }

  /** Resolves once everything handed over so far has been written or has failed. */
  async settled(): Promise<void> {
    while (this.pending || this.inFlight.size > 0) {
      if (this.pending) await new Promise<void>((resolve) => setImmediate(resolve));
      else await Promise.allSettled([...this.inFlight]);
    }
  }

  private take(): Pending {
    if (!this.pending) {
      const pending: Pending = { checkpoint: null, trace: null, waiters: [] };
      this.pending = pending;
      setImmediate(() => {
        if (this.pending === pending) this.pending = null;
        this.send(pending);
      });
    }
    return this.pending;
  }

  private send(pending: Pending): void {
    const trace = pending.trace;
    const failed = (error: unknown) => {
      this.logger.warn({ err: error, step: trace?.step }, 'could not write a step to Redis');
      pending.waiters.forEach((w) => w.reject(error));
    };
    // Sent from setImmediate: nothing may throw out of here (the process would die of it).
    let argv: (string | number)[];
    try {
      argv = this.argvOf(pending);
    } catch (error) {
      failed(error);
      return;
    }
    const written = STEP.run(this.redis, this.keys, argv).then(
      () => pending.waiters.forEach((w) => w.resolve()),
      failed,
    );
    this.inFlight.add(written);
    void written.finally(() => this.inFlight.delete(written));
  }

  private argvOf(pending: Pending): (string | number)[] {
    const trace = pending.trace;
    return [
      String(this.job.id),
      trace ? JSON.stringify(progressOf(trace)) : '',
      trace ? stepLogLine(trace) : '',
      this.job.opts.keepLogs === undefined ? '' : String(this.job.opts.keepLogs),
      pending.checkpoint ?? '',
      CHECKPOINT_TTL_SECONDS,
      trace ? String(trace.step) : '',
      trace ? JSON.stringify(trace) : '',
      PARKED_TTL_SECONDS,
    ];
  }
}
