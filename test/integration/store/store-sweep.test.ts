// The store sweeper against the real MariaDB/MySQL (docs/store.md#retention), in a database of its own: step
// traces of runs finished past STORE_KEEP_STEPS_DAYS go and their runs are marked, recent ones and those of
// running runs stay; settled effects go, pending and uncertain ones never; runs past STORE_KEEP_RUNS_DAYS go with
// their approvals, and 0 keeps them; every statement deletes at most the batch size; one worker sweeps at a time.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { runPage } from '../../../src/console/pages/run-page.js';
import { buildTimeline } from '../../../src/console/timeline.js';
import { runTraceCommand } from '../../../src/console/trace-command.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import { migrate } from '../../../src/store/migrate.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import {
  SWEEPER_SESSION,
  type PruneBatches,
  type Queryable,
} from '../../../src/store/retention/prune-batches.js';
import { pruneSettledEffects } from '../../../src/store/retention/prune-effects.js';
import { pruneRuns } from '../../../src/store/retention/prune-runs.js';
import { pruneSteps } from '../../../src/store/retention/prune-steps.js';
import { DAY_MS, sweepStore, type SweptTable } from '../../../src/store/retention/store-sweep.js';
import { startStoreSweeper, storeSweepLeaseKey } from '../../../src/worker/store-sweeper.js';
import { insertApproval, insertEffect, insertRun, insertSteps } from '../../support/aged-rows.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const RUN_ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_sweep_${RUN_ID}`;
const quiet = { info: () => undefined, warn: () => undefined };

function databaseUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.href;
}

let pool: Pool;
let setupError: unknown;

beforeAll(async () => {
  try {
    pool = await createStorePool(databaseUrl(DATABASE), { connectionLimit: 3, connectTimeout: 5_000 });
    await migrate(pool);
  } catch (error) {
    setupError = error;
  }
});

beforeEach(async () => {
  if (setupError !== undefined) throw setupError;
  for (const table of ['agent_steps', 'agent_runs', 'effect_ledger', 'agent_approvals']) {
    await pool.query(`DELETE FROM ${table}`);
  }
});

afterAll(async () => {
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>(sql, params);
  return Number(rows[0]?.['n']);
}

const stepsOf = (jobId: string) => count('SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = ?', [jobId]);

async function stepsDeletedAt(jobId: string): Promise<Date | null> {
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT steps_deleted_at FROM agent_runs WHERE job_id = ?',
    [jobId],
  );
  return (rows[0]?.['steps_deleted_at'] as Date | null) ?? null;
}

describe('the store sweeper', () => {
  it('deletes the steps of runs finished past the steps retention and marks them, in bounded batches', async () => {
    await insertRun(pool, 'old', 40);
    await insertSteps(pool, 'old', 5_000, 40);
    await insertRun(pool, 'recent', 2);
    await insertSteps(pool, 'recent', 30, 2);
    // Started long ago and still running (parked on an approval): its steps stay.
    await insertRun(pool, 'running', null, 45);
    await insertSteps(pool, 'running', 20, 45);
    // Steps whose run was never recorded go once they are as old.
    await insertSteps(pool, 'orphan', 10, 40);
    const statements: number[] = [];
    const deleted = await sweepStore({
      pool,
      keepStepsDays: 30,
      keepRunsDays: 0,
      logger: quiet,
      batchSize: 1_000,
      pauseMs: 1,
      onDeleted: (table, rows) => {
        if (table === 'agent_steps') statements.push(rows);
      },
    });
    expect(deleted).toMatchObject({ agent_steps: 5_010, agent_runs: 0, stopped: false });
    expect(await stepsOf('old')).toBe(0);
    expect(await stepsOf('orphan')).toBe(0);
    expect(await stepsOf('recent')).toBe(30);
    expect(await stepsOf('running')).toBe(20);
    expect(await stepsDeletedAt('old')).toBeInstanceOf(Date);
    expect(await stepsDeletedAt('recent')).toBeNull();
    expect(await stepsDeletedAt('running')).toBeNull();
    // No statement deleted more than the batch size; 5,010 rows took at least six.
    expect(Math.max(...statements)).toBeLessThanOrEqual(1_000);
    expect(statements.length).toBeGreaterThanOrEqual(6);
    expect(statements.reduce((a, b) => a + b, 0)).toBe(5_010);
    // The run rows themselves stay (runs are kept 400 days by default, forever with 0).
    expect(await count('SELECT COUNT(*) AS n FROM agent_runs')).toBe(3);
    // Started again (a reused job id), the run writes steps anew: it is no longer marked.
    await new RunsRepository(pool).startRuns([
      { jobId: 'old', task: 'again', model: 'gpt-4o', protocol: 'tools', attempt: 1 },
    ]);
    expect(await stepsDeletedAt('old')).toBeNull();
  });

  it("a run started again between its steps' read and their delete keeps the steps it writes", async () => {
    await insertRun(pool, 'reused', 40);
    await insertSteps(pool, 'reused', 3, 40);
    // The prune's statements, with the job id used again just before its delete.
    const racing: Queryable = {
      query: (async (sql: string, values?: unknown[]) => {
        if (/^\s*DELETE (s )?FROM agent_steps/.test(sql)) {
          await new RunsRepository(pool).startRuns([
            { jobId: 'reused', task: 'again', model: 'gpt-4o', protocol: 'tools', attempt: 1 },
          ]);
          await pool.query(
            `INSERT INTO agent_steps (job_id, step, kind, action, observation) VALUES ('reused', 1, 'action', '[]', 'new')
             ON DUPLICATE KEY UPDATE observation = VALUES(observation), created_at = NOW(3)`,
          );
        }
        return pool.query(sql, values);
      }) as Queryable['query'],
    };
    await pruneSteps(
      { pool: racing, batchSize: 1_000, afterBatch: () => Promise.resolve(true) },
      new Date(Date.now() - 30 * DAY_MS),
    );
    expect(
      await count("SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = 'reused' AND observation = 'new'"),
    ).toBe(1);
    expect(await stepsDeletedAt('reused')).toBeNull();
  });

  it('deletes settled effects past the steps retention, never pending or uncertain ones', async () => {
    await insertRun(pool, 'job', 40);
    await insertRun(pool, 'live', null, 40);
    await insertEffect(pool, 'done-old', 'job', 'done', 40);
    await insertEffect(pool, 'failed-old', 'job', 'failed', 40);
    await insertEffect(pool, 'pending-old', 'job', 'pending', 400);
    await insertEffect(pool, 'uncertain-old', 'job', 'uncertain', 400);
    await insertEffect(pool, 'done-recent', 'job', 'done', 3);
    // A run still going may call again and must find its record.
    await insertEffect(pool, 'done-of-live-run', 'live', 'done', 40);
    const deleted = await sweepStore({ pool, keepStepsDays: 30, keepRunsDays: 0, logger: quiet, pauseMs: 1 });
    expect(deleted.effect_ledger).toBe(2);
    const [rows] = await pool.query<RowDataPacket[]>('SELECT effect_key FROM effect_ledger ORDER BY 1');
    expect(rows.map((row) => row['effect_key'])).toEqual([
      'done-of-live-run',
      'done-recent',
      'pending-old',
      'uncertain-old',
    ]);
  });

  it('deletes runs past the runs retention with their steps and approvals; 0 keeps them', async () => {
    await insertRun(pool, 'ancient', 500);
    await insertSteps(pool, 'ancient', 5, 500);
    await insertApproval(pool, 'approval-ancient', 'ancient', 500);
    await insertEffect(pool, 'pending-ancient', 'ancient', 'pending', 500);
    await insertRun(pool, 'kept', 100);
    await insertApproval(pool, 'approval-kept', 'kept', 100);

    const forever = await sweepStore({ pool, keepStepsDays: 30, keepRunsDays: 0, logger: quiet, pauseMs: 1 });
    expect(forever.agent_runs).toBe(0);
    expect(await count('SELECT COUNT(*) AS n FROM agent_runs')).toBe(2);

    const bounded = await sweepStore({
      pool,
      keepStepsDays: 30,
      keepRunsDays: 400,
      logger: quiet,
      pauseMs: 1,
    });
    expect(bounded).toMatchObject({ agent_runs: 1, agent_approvals: 1 });
    const [runs] = await pool.query<RowDataPacket[]>('SELECT job_id FROM agent_runs');
    expect(runs.map((row) => row['job_id'])).toEqual(['kept']);
    const [approvals] = await pool.query<RowDataPacket[]>('SELECT id FROM agent_approvals');
    expect(approvals.map((row) => row['id'])).toEqual(['approval-kept']);
    expect(await stepsOf('ancient')).toBe(0);
    // The at-most-once guarantee outlives its run.
    expect(await count("SELECT COUNT(*) AS n FROM effect_ledger WHERE effect_key = 'pending-ancient'")).toBe(
      1,
    );
  });

  it("locks only the rows it deletes: the fleet's writes next to them do not wait", async () => {
    await insertRun(pool, 'j5', 500);
    await insertSteps(pool, 'j5', 5, 500);
    await insertApproval(pool, 'approval-j5', 'j5', 500);
    await insertRun(pool, 'j7', 40);
    await insertSteps(pool, 'j7', 5, 40);
    await insertRun(pool, 'j9', 1);
    await insertEffect(pool, 'j7:1:0', 'j7', 'done', 40);
    // The sweeper's statements in one transaction left open: every lock they take is still held.
    const sweeper = await pool.getConnection();
    const writer = await pool.getConnection();
    try {
      await sweeper.query(SWEEPER_SESSION);
      await sweeper.beginTransaction();
      const held: PruneBatches = {
        pool: sweeper,
        batchSize: 1_000,
        afterBatch: () => Promise.resolve(true),
      };
      await pruneSteps(held, new Date(Date.now() - 30 * DAY_MS));
      await pruneSettledEffects(held, new Date(Date.now() - 30 * DAY_MS));
      await pruneRuns({ runs: held, steps: held, approvals: held }, new Date(Date.now() - 400 * DAY_MS));
      await writer.query('SET SESSION innodb_lock_wait_timeout = 1');
      // Job ids sorting between and after the swept ones, a new run and its steps, a recent run's end.
      await writer.query(
        `INSERT INTO agent_runs (job_id, task, model, protocol, status, started_at) VALUES
         ('j6', 't', 'm', 'tools', 'running', NOW(3)), ('j8', 't', 'm', 'tools', 'running', NOW(3))`,
      );
      for (const jobId of ['j5a', 'j6', 'j7a', 'j8', 'j9']) {
        await writer.query(
          `INSERT INTO agent_steps (job_id, step, kind, action, observation) VALUES (?, 1, 'action', '[]', 'o')`,
          [jobId],
        );
      }
      await writer.query(
        "UPDATE agent_runs SET finished_at = NOW(3), status = 'succeeded' WHERE job_id = 'j9'",
      );
      await writer.query(
        `INSERT INTO agent_approvals (id, job_id, step, call_id, call_key, tool, arguments, requested_at, expires_at)
         VALUES ('approval-j6', 'j6', 1, 'c', 'j6:1:0', 'send_email', '{}', NOW(3), NOW(3))`,
      );
      // An effect claimed with a key sorting right after the deleted one, and one after every key.
      await writer.query(
        `INSERT INTO effect_ledger (effect_key, job_id, tool, status) VALUES
         ('j7:1:0a', 'j7', 'send_email', 'pending'), ('j9:1:0', 'j9', 'send_email', 'pending')`,
      );
      await sweeper.commit();
    } finally {
      await sweeper.query('ROLLBACK').catch(() => undefined);
      sweeper.destroy();
      writer.release();
    }
    expect(await stepsOf('j5')).toBe(0);
    expect(await stepsOf('j7')).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM agent_runs WHERE job_id = 'j5'")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM effect_ledger WHERE effect_key = 'j7:1:0'")).toBe(0);
  });

  it('stops between statements when told to', async () => {
    await insertRun(pool, 'old', 40);
    await insertSteps(pool, 'old', 3_000, 40);
    const deleted = await sweepStore({
      pool,
      keepStepsDays: 30,
      keepRunsDays: 0,
      logger: quiet,
      batchSize: 1_000,
      pauseMs: 1,
      keepGoing: () => false,
    });
    expect(deleted).toMatchObject({ agent_steps: 1_000, stopped: true });
    expect(await stepsOf('old')).toBe(2_000);
  });

  it('sweeps on one worker at a time: the one holding the lease; the rows are counted', async () => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const prefix = `af-sweep-${RUN_ID}`;
    try {
      await insertRun(pool, 'old', 40);
      await insertSteps(pool, 'old', 10, 40);
      // Another worker holds the lease: this one skips its round.
      await redis.set(storeSweepLeaseKey(prefix), 'someone-else', 'PX', 60_000);
      const deleted: [SweptTable, number][] = [];
      const metrics = new FleetMetrics({ defaultMetrics: false });
      const options = {
        pool,
        redis,
        prefix,
        keepStepsDays: 30,
        keepRunsDays: 0,
        logger: quiet,
        intervalMs: 3_600_000,
        sweep: { pauseMs: 1 },
        onDeleted: (table: SweptTable, rows: number) => {
          deleted.push([table, rows]);
          metrics.observeStoreRowsDeleted(table, rows);
        },
      };
      const sweeper = startStoreSweeper(options);
      expect(await sweeper.runOnce()).toBe(false);
      expect(await stepsOf('old')).toBe(10);
      // Given back: the next round sweeps, and frees the lease after.
      await redis.del(storeSweepLeaseKey(prefix));
      expect(await sweeper.runOnce()).toBe(true);
      await sweeper.close();
      expect(await stepsOf('old')).toBe(0);
      expect(deleted).toEqual([['agent_steps', 10]]);
      expect(await metrics.metrics()).toContain(
        'agentfleet_store_rows_deleted_total{table="agent_steps"} 10',
      );
      expect(await redis.exists(storeSweepLeaseKey(prefix))).toBe(0);
    } finally {
      await redis.del(storeSweepLeaseKey(prefix));
      redis.disconnect();
    }
  });
});

describe("a swept run's page and trace", () => {
  async function pageOf(jobId: string): Promise<string> {
    const loaded = await new ConsoleStore(pool).loadRun(jobId);
    if (loaded === null) throw new Error(`no run ${jobId}`);
    return runPage(buildTimeline(loaded.run, loaded.steps, loaded.children));
  }

  async function traceOf(jobId: string, json = false): Promise<string> {
    let out = '';
    const code = await runTraceCommand(
      ['--job', jobId, ...(json ? ['--json'] : [])],
      () => databaseUrl(DATABASE),
      { stdout: (text) => (out += text), stderr: (text) => (out += text) },
    );
    expect(code).toBe(0);
    return out;
  }

  it('say the steps were deleted, and after how many days, instead of an empty timeline', async () => {
    await insertRun(pool, 'swept', 40);
    await insertSteps(pool, 'swept', 3, 40);
    await insertRun(pool, 'never-stepped', 40);
    await insertRun(pool, 'fresh', 1);
    await insertSteps(pool, 'fresh', 2, 1);
    await sweepStore({ pool, keepStepsDays: 30, keepRunsDays: 0, logger: quiet, pauseMs: 1 });

    const swept = await pageOf('swept');
    expect(swept).toContain('steps deleted after 40 days (STORE_KEEP_STEPS_DAYS)');
    expect(swept).not.toContain('no step recorded');
    expect(await traceOf('swept')).toMatch(
      /timeline:\n {2}steps deleted after 40 days \(STORE_KEEP_STEPS_DAYS\), on \d{4}-\d\d-\d\d\n/,
    );
    const json = JSON.parse(await traceOf('swept', true)) as { run: { stepsDeleted: unknown } };
    expect(json.run.stepsDeleted).toMatchObject({ afterDays: 40 });

    // A run that had no steps to delete is not said to have lost them; a fresh one shows its steps.
    expect(await pageOf('never-stepped')).toContain('no step recorded');
    expect(await traceOf('never-stepped')).not.toContain('steps deleted');
    const fresh = await pageOf('fresh');
    expect(fresh).not.toContain('steps deleted');
    expect(fresh).toContain('step 2');
  });
});
