// The store sweeper in a real worker process: started with the worker, it reads STORE_KEEP_STEPS_DAYS and
// STORE_KEEP_RUNS_DAYS and, holding the fleet's lease, sweeps once at start (old steps and runs go, recent stay),
// then every STORE_SWEEP_INTERVAL_MS.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { storeSweepLeaseKey } from '../../../src/worker/store-sweeper.js';
import { insertRun, insertSteps } from '../../support/aged-rows.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';

let ns: FleetNamespace;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  ns = createNamespace('store-sweeper');
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  try {
    await migrate(pool);
    await insertRun(pool, 'steps-old', 10);
    await insertSteps(pool, 'steps-old', 4, 10);
    await insertRun(pool, 'run-old', 60);
    await insertSteps(pool, 'run-old', 2, 60);
    await insertRun(pool, 'recent', 1);
    await insertSteps(pool, 'recent', 3, 1);
  } finally {
    await pool.end();
  }
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns.cleanup();
});

describe('a worker', () => {
  it('sweeps the store at start with the configured retention, and gives the lease back', async () => {
    worker = startWorker(ns, {
      STORE_KEEP_STEPS_DAYS: '7',
      STORE_KEEP_RUNS_DAYS: '30',
      STORE_SWEEP_INTERVAL_MS: '1000',
    });
    await worker.waitForOutput(/store sweep done/, 30_000);
    const runs = await queryStore<{ job_id: string; steps: number; deleted: Date | null }>(
      ns,
      `SELECT r.job_id, r.steps_deleted_at AS deleted,
         (SELECT COUNT(*) FROM agent_steps s WHERE s.job_id = r.job_id) AS steps
       FROM agent_runs r ORDER BY r.job_id`,
    );
    expect(runs.map((run) => [run.job_id, Number(run.steps), run.deleted !== null])).toEqual([
      ['recent', 3, false],
      ['steps-old', 0, true],
    ]);
    // And again every STORE_SWEEP_INTERVAL_MS.
    await worker.waitForOutput(/store sweep done[\s\S]*store sweep done/, 15_000);
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.exists(storeSweepLeaseKey(ns.prefix))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});
