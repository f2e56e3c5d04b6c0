// The store sweeper on the workers: every worker tries at start and then every interval, and the one that takes
// the fleet's lease (a Redis key under QUEUE_PREFIX) sweeps; the others skip that round. The lease is renewed
// between statements, so a sweep whose worker loses it (Redis away past the lease, a long stall) stops, and a
// worker that dies mid-sweep frees it when it expires. A failing store is logged; the next round tries again.
// Runs left `running` are looked up on the fleet's tasks queue (abandoned-runs.ts): the store is one fleet's.
import { Queue } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import type { RedisClient } from '../queue/redis.js';
import type { ErrorEmitter } from '../queue/redis-outage-log.js';
import { TASKS_QUEUE } from '../queue/names.js';
import { RedisLease } from '../queue/redis-lease.js';
import { OutcomeStore } from './outcome-store.js';
import type { RunJobLookup } from '../store/retention/abandoned-runs.js';
import { sweepStore, type StoreSweepOptions, type SweptTable } from '../store/retention/store-sweep.js';

/** The default of STORE_SWEEP_INTERVAL_MS. */
export const STORE_SWEEP_INTERVAL_MS = 3_600_000;
const LEASE_MS = 120_000;

export interface StoreSweeperLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface StoreSweeperOptions {
  pool: Pool;
  redis: RedisClient;
  prefix: string;
  keepStepsDays: number;
  keepRunsDays: number;
  logger: StoreSweeperLogger;
  onDeleted?: (table: SweptTable, rows: number) => void;
  intervalMs?: number;
  /** Passed on to each sweep (tests). */
  sweep?: Partial<Pick<StoreSweepOptions, 'batchSize' | 'pauseMs' | 'now'>>;
  /**
   * Takes the errors of the sweeper's own tasks queue (the worker's outage log: one line an outage). Without it
   * they are dropped: the sweep's own calls fail and say so. BullMQ prints an error nobody listens to, with its
   * stack, at every failed reconnection.
   */
  watchErrors?: (emitter: ErrorEmitter, source: string) => void;
}

export interface StoreSweeper {
  /** One round now (the next after the one under way, if any): true when this worker swept. */
  runOnce(): Promise<boolean>;
  close(): Promise<void>;
}

export function storeSweepLeaseKey(prefix: string): string {
  return `${prefix}:store-sweeper:lease`;
}

export function startStoreSweeper(options: StoreSweeperOptions): StoreSweeper {
  const lease = new RedisLease(options.redis, storeSweepLeaseKey(options.prefix), LEASE_MS);
  const tasks = new Queue(TASKS_QUEUE, { connection: options.redis, prefix: options.prefix });
  if (options.watchErrors) options.watchErrors(tasks, 'store sweeper');
  else tasks.on('error', () => undefined);
  let closing = false;
  let running: Promise<boolean> = Promise.resolve(false);
  const round = async (): Promise<boolean> => {
    if (closing) return false;
    try {
      if (!(await lease.acquire())) return false;
    } catch (error) {
      options.logger.warn({ err: messageOf(error) }, 'store sweep: Redis unavailable, skipped');
      return false;
    }
    const started = Date.now();
    let outcome: { fields: Record<string, unknown>; message: string };
    try {
      const deleted = await sweepStore({
        ...options.sweep,
        pool: options.pool,
        keepStepsDays: options.keepStepsDays,
        keepRunsDays: options.keepRunsDays,
        logger: options.logger,
        onDeleted: options.onDeleted,
        jobState: jobStateOn(tasks, new OutcomeStore(options.redis, options.prefix)),
        keepGoing: async () => !closing && (await lease.renew().catch(() => false)),
      });
      outcome = {
        fields: { ...deleted, ms: Date.now() - started },
        message: deleted.stopped ? 'store sweep stopped; the next round goes on' : 'store sweep done',
      };
    } catch (error) {
      outcome = {
        fields: { err: messageOf(error) },
        message: 'store sweep failed; the next round tries again',
      };
    } finally {
      await lease.release().catch(() => undefined);
    }
    // Logged once the lease is given back: whoever reads the line may take it.
    if ('err' in outcome.fields) options.logger.warn(outcome.fields, outcome.message);
    else options.logger.info(outcome.fields, outcome.message);
    return true;
  };
  const runOnce = () => (running = running.then(round));
  void runOnce();
  const timer = setInterval(() => void runOnce(), options.intervalMs ?? STORE_SWEEP_INTERVAL_MS);
  timer.unref();
  return {
    runOnce,
    async close() {
      closing = true;
      clearInterval(timer);
      await running;
      // The connection is the worker's: closing the queue leaves it open.
      await tasks.close().catch(() => undefined);
    },
  };
}

/**
 * What the tasks queue says of a run's job; a Redis error fails the sweep (the next round asks again). A job whose
 * outcome is kept for MySQL (outcome-store.ts) is live whatever its state: failed for good while MySQL was down,
 * the RunFinisher's sweep records its real result.
 */
export function jobStateOn(tasks: Queue, outcomes: Pick<OutcomeStore, 'load'>): RunJobLookup {
  return async (jobId) => {
    if (await outcomes.load(jobId)) return { state: 'live' };
    const job = await tasks.getJob(jobId);
    if (!job) return { state: 'gone' };
    const state = await job.getState();
    if (state === 'unknown') return { state: 'gone' };
    if (state === 'failed') return { state: 'failed', reason: job.failedReason ?? 'no reason recorded' };
    if (state === 'completed') {
      return {
        state: 'completed',
        result: job.returnvalue as unknown,
        finishedAt: job.finishedOn ? new Date(job.finishedOn) : null,
      };
    }
    return { state: 'live' };
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
