// What the store sweeper sweeps besides steps, effects and runs (docs/store.md#retention), against the real
// MariaDB/MySQL and Redis: batches and their reports past STORE_KEEP_RUNS_DAYS, settled rows of send_email's old
// email_ledger (never pending or uncertain ones), runs left `running` by a crash, and the sweeper's interval.
import { randomBytes } from 'node:crypto';
import { FlowProducer, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { TASKS_QUEUE } from '../../../src/queue/names.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { ABANDONED_AFTER_MS, type RunJobState } from '../../../src/store/retention/abandoned-runs.js';
import { sweepStore, type SweptTable } from '../../../src/store/retention/store-sweep.js';
import { startStoreSweeper } from '../../../src/worker/store-sweeper.js';
import { OutcomeStore } from '../../../src/worker/outcome-store.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import {
  insertBatch,
  insertBatchReport,
  insertApproval,
  insertEmailLedgerRow,
  insertRun,
  insertSteps,
} from '../../support/aged-rows.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const RUN_ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_sweep_more_${RUN_ID}`;
const PREFIX = `af-sweep-more-${RUN_ID}`;
const quiet = { info: () => undefined, warn: () => undefined };

let pool: Pool;
let redis: Redis;
let setupError: unknown;

beforeAll(async () => {
  try {
    const url = new URL(SERVER);
    url.pathname = `/${DATABASE}`;
    pool = await createStorePool(url.href, { connectionLimit: 3, connectTimeout: 5_000 });
    await migrate(pool);
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  } catch (error) {
    setupError = error;
  }
});

beforeEach(async () => {
  if (setupError !== undefined) throw setupError;
  for (const table of [
    'agent_steps',
    'agent_approvals',
    'agent_runs',
    'agent_batches',
    'batch_reports',
    'email_ledger',
  ]) {
    await pool.query(`DELETE FROM ${table}`);
  }
  await deleteKeysWithPrefix(redis, PREFIX);
});

afterAll(async () => {
  if (redis) {
    await deleteKeysWithPrefix(redis, PREFIX);
    redis.disconnect();
  }
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

async function ids(sql: string): Promise<string[]> {
  const [rows] = await pool.query<RowDataPacket[]>(sql);
  return rows.map((row) => String(Object.values(row)[0]));
}

function sweep(extra: Partial<Parameters<typeof sweepStore>[0]> = {}) {
  const statements: [SweptTable, number][] = [];
  const done = sweepStore({
    pool,
    keepStepsDays: 30,
    keepRunsDays: 400,
    logger: quiet,
    batchSize: 1_000,
    pauseMs: 1,
    onDeleted: (table, rows) => statements.push([table, rows]),
    ...extra,
  });
  return { done, statements };
}

describe('batches and their reports', () => {
  it('go once completed past the runs retention; running ones and recent ones stay; 0 keeps them', async () => {
    await insertBatch(pool, 'old', 500);
    await insertBatchReport(pool, 'old', 499);
    await insertBatch(pool, 'recent', 10);
    await insertBatchReport(pool, 'recent', 10);
    // Created long ago and never completed: kept, whatever its age.
    await insertBatch(pool, 'stuck', null, 600);
    // A report whose batch row is gone goes once it is as old; a recent one stays.
    await insertBatchReport(pool, 'orphan-old', 450);
    await insertBatchReport(pool, 'orphan-new', 3);
    // 0 keeps them all.
    expect(await sweep({ keepRunsDays: 0 }).done).toMatchObject({ agent_batches: 0, batch_reports: 0 });
    expect(await ids('SELECT batch_id FROM agent_batches ORDER BY batch_id')).toEqual([
      'old',
      'recent',
      'stuck',
    ]);
    const { done, statements } = sweep();
    expect(await done).toMatchObject({ agent_batches: 1, batch_reports: 2, stopped: false });
    expect(await ids('SELECT batch_id FROM agent_batches ORDER BY batch_id')).toEqual(['recent', 'stuck']);
    expect(await ids('SELECT batch_id FROM batch_reports ORDER BY batch_id')).toEqual([
      'orphan-new',
      'recent',
    ]);
    expect(statements).toEqual([
      ['batch_reports', 1],
      ['agent_batches', 1],
      ['batch_reports', 1],
    ]);
  });

  it('go at most the batch size a statement', async () => {
    for (let i = 0; i < 25; i++) {
      await insertBatch(pool, `b-${String(i).padStart(2, '0')}`, 500);
      await insertBatchReport(pool, `b-${String(i).padStart(2, '0')}`, 500);
    }
    const { done, statements } = sweep({ batchSize: 10 });
    expect(await done).toMatchObject({ agent_batches: 25, batch_reports: 25 });
    expect(Math.max(...statements.map(([, rows]) => rows))).toBe(10);
    expect(statements.filter(([table]) => table === 'agent_batches').map(([, rows]) => rows)).toEqual([
      10, 10, 5,
    ]);
  });
});

describe("send_email's old email_ledger", () => {
  it('loses its settled rows past the steps retention, never pending or uncertain ones', async () => {
    for (const status of ['pending', 'sent', 'dry_run', 'failed', 'uncertain'] as const) {
      await insertEmailLedgerRow(pool, `old-${status}`, status, 40);
      await insertEmailLedgerRow(pool, `new-${status}`, status, 2);
    }
    const metrics = new FleetMetrics({ defaultMetrics: false });
    const { done } = sweep({ onDeleted: (table, rows) => metrics.observeStoreRowsDeleted(table, rows) });
    expect(await done).toMatchObject({ email_ledger: 3 });
    expect(await ids('SELECT call_key FROM email_ledger ORDER BY call_key')).toEqual([
      'new-dry_run',
      'new-failed',
      'new-pending',
      'new-sent',
      'new-uncertain',
      'old-pending',
      'old-uncertain',
    ]);
    expect(await metrics.metrics()).toContain('agentfleet_store_rows_deleted_total{table="email_ledger"} 3');
  });
});

describe('runs left running by a crash', () => {
  const quietFor = (ms: number) => new Date(Date.now() - ms);

  async function touch(jobId: string, updatedAt: Date): Promise<void> {
    await pool.query('UPDATE agent_runs SET updated_at = ? WHERE job_id = ?', [updatedAt, jobId]);
  }

  async function runsByStatus(): Promise<Record<string, string>> {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT job_id, status FROM agent_runs');
    return Object.fromEntries(rows.map((row) => [String(row['job_id']), String(row['status'])]));
  }

  it('are failed as `abandoned` when their job is gone or failed; live jobs and recent rows are left', async () => {
    for (const jobId of ['gone', 'failed-job', 'live', 'recent-gone', 'odd'])
      await insertRun(pool, jobId, null, 2);
    await insertRun(pool, 'done-long-ago', 5);
    await touch('recent-gone', quietFor(ABANDONED_AFTER_MS / 2));
    for (const jobId of ['gone', 'failed-job', 'live', 'odd'])
      await touch(jobId, quietFor(2 * ABANDONED_AFTER_MS));
    const states: Record<string, RunJobState> = {
      'failed-job': { state: 'failed', reason: 'worker lost' },
      live: { state: 'live' },
      // Completed, with something that is not its result: nothing to record, so it cannot end otherwise.
      odd: { state: 'completed', result: { not: 'a result' }, finishedAt: null },
    };
    const asked: string[] = [];
    const { done } = sweep({
      jobState: (jobId) => {
        asked.push(jobId);
        return Promise.resolve(states[jobId] ?? { state: 'gone' });
      },
    });
    expect(await done).toMatchObject({ runs_abandoned: 3, runs_recorded: 0, agent_runs: 0 });
    // Only quiet running rows are looked up.
    expect(asked.sort()).toEqual(['failed-job', 'gone', 'live', 'odd']);
    expect(await runsByStatus()).toEqual({
      gone: 'failed',
      'failed-job': 'failed',
      live: 'running',
      odd: 'failed',
      'recent-gone': 'running',
      'done-long-ago': 'succeeded',
    });
    const [rows] = await pool.query<RowDataPacket[]>(
      "SELECT job_id, stop_reason, error, finished_at FROM agent_runs WHERE status = 'failed' ORDER BY job_id",
    );
    const errors = rows.map((row) => [row['job_id'], row['stop_reason'], JSON.parse(String(row['error']))]);
    expect(errors).toEqual([
      [
        'failed-job',
        'error',
        expect.objectContaining({
          kind: 'system',
          code: 'abandoned',
          message: expect.stringContaining('worker lost'),
        }),
      ],
      ['gone', 'error', expect.objectContaining({ code: 'abandoned', retryable: false })],
      [
        'odd',
        'error',
        expect.objectContaining({
          code: 'abandoned',
          message: expect.stringContaining('could not be recorded'),
        }),
      ],
    ]);
    for (const row of rows)
      expect((row['finished_at'] as Date).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it("through the worker's sweeper: asks the fleet's tasks queue, records a completed job's result", async () => {
    const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: PREFIX });
    try {
      // A job still waiting, a job completed with its result (its end's record lost), and a job Redis lost.
      await tasks.add('agent-task', { task: 'waits' }, { jobId: 'waiting' });
      const result = {
        jobId: 'finished',
        status: 'succeeded',
        stopReason: 'answer',
        answer: 'the answer',
        steps: 1,
        toolCalls: 0,
        usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.001 },
        error: null,
      };
      await redis.eval(
        // A completed job as BullMQ keeps it, written directly: no worker is needed to finish it.
        `redis.call('hset', KEYS[1], 'name', 'agent-task', 'data', '{}', 'opts', '{}', 'timestamp', ARGV[2],
           'returnvalue', ARGV[1], 'finishedOn', ARGV[2], 'processedOn', ARGV[2])
         redis.call('zadd', KEYS[2], ARGV[2], 'finished')`,
        2,
        `${PREFIX}:${TASKS_QUEUE}:finished`,
        `${PREFIX}:${TASKS_QUEUE}:completed`,
        JSON.stringify(result),
        String(Date.now() - 3_000_000),
      );
      for (const jobId of ['waiting', 'finished', 'lost']) {
        await insertRun(pool, jobId, null, 1);
        await touch(jobId, quietFor(2 * ABANDONED_AFTER_MS));
      }
      const sweeper = startStoreSweeper({
        pool,
        redis,
        prefix: PREFIX,
        keepStepsDays: 30,
        keepRunsDays: 400,
        logger: quiet,
        sweep: { pauseMs: 1 },
      });
      await sweeper.runOnce();
      await sweeper.close();
      expect(await runsByStatus()).toEqual({ waiting: 'running', finished: 'succeeded', lost: 'failed' });
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT answer, total_tokens FROM agent_runs WHERE job_id = 'finished'",
      );
      expect(rows[0]).toMatchObject({ answer: 'the answer', total_tokens: 15 });
    } finally {
      await tasks.close();
    }
  });

  it('leave runs the fleet still ends: parked, waiting for children, between retries, or with a kept outcome', async () => {
    const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: PREFIX });
    const flow = new FlowProducer({ connection: redis, prefix: PREFIX });
    const workerRedis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(TASKS_QUEUE, () => Promise.reject(new Error('the model endpoint is down')), {
      connection: workerRedis,
      prefix: PREFIX,
      autorun: false,
    });
    try {
      // An attempt failed with attempts left (delayed for its retry), and a job failed for good while MySQL was
      // down: its outcome is kept in Redis for the RunFinisher's sweep, which records it once MySQL is back.
      const failed = new Promise<void>((resolve) => {
        let count = 0;
        worker.on('failed', () => {
          if (++count === 2) resolve();
        });
      });
      await tasks.add(
        'agent-task',
        { task: 'retried' },
        { jobId: 'retrying', attempts: 3, backoff: 3_600_000 },
      );
      await tasks.add('agent-task', { task: 'kept' }, { jobId: 'kept', attempts: 1 });
      void worker.run();
      await failed;
      await worker.close();
      const outcome = {
        result: { jobId: 'kept', status: 'failed', usage: { costUsd: 0.02 } } as unknown as AgentResult,
        started: true,
        recordTries: 3,
      };
      await new OutcomeStore(redis, PREFIX).keepUnrecorded('kept', outcome);
      // Parked on an approval (delayed), and a parent waiting for its child (itself still waiting).
      await tasks.add('agent-task', { task: 'parked' }, { jobId: 'parked', delay: 86_400_000 });
      await flow.add({
        name: 'agent-task',
        queueName: TASKS_QUEUE,
        data: { task: 'parent' },
        opts: { jobId: 'parent' },
        children: [
          { name: 'agent-task', queueName: TASKS_QUEUE, data: { task: 'child' }, opts: { jobId: 'child' } },
        ],
      });
      expect(
        await Promise.all(
          ['retrying', 'kept', 'parked', 'parent', 'child'].map((id) => tasks.getJobState(id)),
        ),
      ).toEqual(['delayed', 'failed', 'delayed', 'waiting-children', 'waiting']);
      for (const jobId of ['retrying', 'kept', 'parked', 'parent', 'child']) {
        await insertRun(pool, jobId, null, 2);
        await touch(jobId, quietFor(2 * ABANDONED_AFTER_MS));
      }
      const sweeper = startStoreSweeper({
        pool,
        redis,
        prefix: PREFIX,
        keepStepsDays: 30,
        keepRunsDays: 400,
        logger: quiet,
        sweep: { pauseMs: 1 },
      });
      await sweeper.runOnce();
      await sweeper.close();
      expect(await runsByStatus()).toEqual({
        retrying: 'running',
        kept: 'running',
        parked: 'running',
        parent: 'running',
        child: 'running',
      });
    } finally {
      await worker.close();
      workerRedis.disconnect();
      await flow.close();
      await tasks.close();
    }
  });

  it('leave a run started again between its lookup and its write, whatever its job said', async () => {
    // The job's id reused: the completed job Redis held was trimmed and a job of the same id (its idempotency key
    // enqueued again) started meanwhile, its start writing the row again. The old job's result must not end it.
    const old = {
      jobId: 'reused',
      status: 'succeeded',
      stopReason: 'answer',
      answer: 'the old job answered',
      steps: 1,
      toolCalls: 0,
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, costUsd: 0 },
      error: null,
    };
    for (const jobId of ['reused', 'reused-gone']) {
      await insertRun(pool, jobId, null, 2);
      await touch(jobId, quietFor(2 * ABANDONED_AFTER_MS));
    }
    const { done } = sweep({
      jobState: async (jobId) => {
        await pool.query('UPDATE agent_runs SET attempts = attempts + 1 WHERE job_id = ?', [jobId]);
        return jobId === 'reused' ? { state: 'completed', result: old, finishedAt: null } : { state: 'gone' };
      },
    });
    expect(await done).toMatchObject({ runs_abandoned: 0, runs_recorded: 0 });
    expect(await runsByStatus()).toEqual({ reused: 'running', 'reused-gone': 'running' });
  });

  it('are settled before the steps are swept, and their steps kept for the steps retention', async () => {
    await insertRun(pool, 'crashed', null, 40);
    await insertSteps(pool, 'crashed', 3, 40);
    await touch('crashed', quietFor(2 * ABANDONED_AFTER_MS));
    const { done } = sweep({ jobState: () => Promise.resolve({ state: 'gone' }) });
    expect(await done).toMatchObject({ runs_abandoned: 1, agent_steps: 0 });
    const [rows] = await pool.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = 'crashed'",
    );
    expect(Number(rows[0]?.['n'])).toBe(3);
  });
});

describe('runs past the runs retention', () => {
  it('leave a run started again while its pieces are deleted (its job id reused): its approvals stay', async () => {
    await insertRun(pool, 'reused', 500);
    await insertSteps(pool, 'reused', 2, 500);
    await insertApproval(pool, 'old-approval', 'reused', 500);
    let restarted = false;
    const { done } = sweep({
      keepStepsDays: 1_000,
      // Between the runs' read and the deletes of their pieces, a job of the same id starts and parks on an
      // approval, as a reused idempotency key's job would.
      onDeleted: (table) => {
        if (table !== 'agent_steps' || restarted) return;
        restarted = true;
        void pool
          .query("UPDATE agent_runs SET status = 'running', finished_at = NULL WHERE job_id = 'reused'")
          .then(() => insertApproval(pool, 'new-approval', 'reused', 0));
      },
      pauseMs: 200,
    });
    await done;
    expect(restarted).toBe(true);
    expect(await ids("SELECT job_id FROM agent_runs WHERE job_id = 'reused'")).toEqual(['reused']);
    expect(await ids("SELECT id FROM agent_approvals WHERE job_id = 'reused' ORDER BY id")).toContain(
      'new-approval',
    );
  });
});

describe('STORE_SWEEP_INTERVAL_MS', () => {
  it('defaults to an hour, and is checked', () => {
    expect(parseEnv({}).STORE_SWEEP_INTERVAL_MS).toBe(3_600_000);
    expect(parseEnv({ STORE_SWEEP_INTERVAL_MS: '60000' }).STORE_SWEEP_INTERVAL_MS).toBe(60_000);
    for (const bad of ['0', '999', '1e6', '604800001']) {
      expect(() => parseEnv({ STORE_SWEEP_INTERVAL_MS: bad })).toThrow(/^STORE_SWEEP_INTERVAL_MS="/);
    }
  });

  it('is how often a worker sweeps', async () => {
    await insertRun(pool, 'old', 40);
    await insertSteps(pool, 'old', 2, 40);
    let sweeps = 0;
    const sweeper = startStoreSweeper({
      pool,
      redis,
      prefix: PREFIX,
      keepStepsDays: 30,
      keepRunsDays: 0,
      intervalMs: 300,
      sweep: { pauseMs: 1 },
      logger: {
        info: (_fields, message) => {
          if (message === 'store sweep done') sweeps += 1;
        },
        warn: () => undefined,
      },
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    } finally {
      await sweeper.close();
    }
    // At start and about every 300 ms since.
    expect(sweeps).toBeGreaterThanOrEqual(3);
  });
});
