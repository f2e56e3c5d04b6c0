// Scenario 1: BullMQ alone. A Worker with an empty processor in its own process; N jobs added with one
// addBulk; the clock runs from that add to the last completion (its finishedOn in Redis).
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { spawnChild, nextMessage } from '../lib/children.js';
import { createNamespace, log, QueueWatch, REDIS_URL } from '../lib/fleet.js';
import { cpuMsOf } from '../lib/proc.js';
import { median, spread } from '../lib/stats.js';

export interface BareBullmqBatch {
  elapsedMs: number;
  jobsPerSecond: number;
  /** CPU of the worker process per job. */
  workerCpuMsPerJob: number;
}

export interface BareBullmqResult {
  jobs: number;
  concurrency: number;
  /** Medians over the repetitions. */
  jobsPerSecond: number;
  workerCpuMsPerJob: number;
  spread: number;
  batches: BareBullmqBatch[];
}

const QUEUE = 'noop';

export async function bareBullmq(options: {
  jobs: number;
  concurrency: number;
  warmupJobs: number;
  repetitions: number;
}): Promise<BareBullmqResult> {
  const ns = createNamespace('noop', false);
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, QUEUE);
  const worker = spawnChild(
    'noop-worker',
    ['--import', 'tsx', 'bench/noop-worker.ts'],
    {
      REDIS_URL,
      BENCH_PREFIX: ns.prefix,
      BENCH_QUEUE: QUEUE,
      BENCH_CONCURRENCY: String(options.concurrency),
    },
    { ipc: true },
  );
  try {
    await nextMessage(worker, 'ready');
    const batch = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) => ({ name: 'noop', data: { i: from + i } }));
    log(`bare BullMQ: warm-up ${options.warmupJobs} jobs`);
    await queue.addBulk(batch(options.warmupJobs, 0));
    await watch.waitForCompleted(options.warmupJobs, worker, 60_000);

    const batches: BareBullmqBatch[] = [];
    let done = options.warmupJobs;
    for (let rep = 1; rep <= options.repetitions; rep++) {
      log(`bare BullMQ: batch ${rep}, ${options.jobs} jobs, concurrency ${options.concurrency}`);
      const cpu0 = cpuMsOf(worker.pid);
      const t0 = Date.now();
      await queue.addBulk(batch(options.jobs, done));
      done += options.jobs;
      await watch.waitForCompleted(done, worker, 120_000);
      const t1 = await watch.lastFinishedOn();
      const cpu1 = cpuMsOf(worker.pid);
      const elapsedMs = t1 - t0;
      batches.push({
        elapsedMs,
        jobsPerSecond: options.jobs / (elapsedMs / 1000),
        workerCpuMsPerJob: (cpu1 - cpu0) / options.jobs,
      });
    }
    return {
      jobs: options.jobs,
      concurrency: options.concurrency,
      jobsPerSecond: median(batches.map((b) => b.jobsPerSecond)),
      workerCpuMsPerJob: median(batches.map((b) => b.workerCpuMsPerJob)),
      spread: spread(batches.map((b) => b.jobsPerSecond)),
      batches,
    };
  } finally {
    await worker.stop();
    await queue.close();
    connection.disconnect();
    watch.close();
    await ns.cleanup();
  }
}
