// The store against the real MariaDB/MySQL of MYSQL_URL's server: each run works in databases of its own,
// named af_test_store_<random>, and drops them at the end. With no server every test fails, none is skipped.
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { StoreError } from '../../../src/kernel/errors.js';
import { loadMigrations, MIGRATIONS_DIRECTORY, splitStatements } from '../../../src/store/migration-files.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier, SESSION_SETUP } from '../../../src/store/pool.js';
import { resultOfRun } from '../../../src/store/run-result.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';

/** Every migration the repository ships, in order: the tests must not break when one is added. */
const ALL_VERSIONS = (await loadMigrations()).map((m) => m.version);

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const RUN_ID = randomBytes(4).toString('hex');

function databaseUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.href;
}

async function dropAndEnd(pool: Pool, database: string): Promise<void> {
  await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
  await pool.end();
}

async function count(pool: Pool, sql: string, params: unknown[] = []): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>(sql, params);
  return Number(rows[0]?.['n']);
}

async function tables(pool: Pool): Promise<string[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1',
  );
  return rows.map((row) => String(row['name']));
}

function trace(step: number, overrides: Partial<StepTrace> = {}): StepTrace {
  return {
    runId: 'ignored',
    step,
    kind: 'action',
    actions: [
      {
        id: 'call_1',
        tool: 'sql_query',
        args: { sql: 'SELECT name FROM customers LIMIT 3' },
        ok: true,
        errorCode: null,
        latencyMs: 12,
      },
      { id: 'call_2', tool: 'list_tables', args: {}, ok: false, errorCode: 'timeout', latencyMs: 5000 },
    ],
    observations: ['[{"name":"Ada"}]', 'customers, orders — ünïcødé ✓'],
    promptTokens: 812,
    completionTokens: 64,
    costUsd: 0.0123456789,
    latencyMs: 1250,
    modelLatencyMs: 900,
    modelCalls: 2,
    error: null,
    totals: {
      promptTokens: 812,
      completionTokens: 64,
      totalTokens: 876,
      costUsd: 0.0123456789,
      steps: step,
      maxSteps: 8,
      toolCalls: 2,
    },
    ...overrides,
  };
}

describe('splitStatements', () => {
  it('splits a file into statements at semicolons that end a line', () => {
    const text =
      "-- header;\nCREATE TABLE a (x VARCHAR(3) DEFAULT ';');\n\nINSERT INTO a VALUES (1);  \nSELECT 1";
    expect(splitStatements(text)).toEqual([
      "CREATE TABLE a (x VARCHAR(3) DEFAULT ';')",
      'INSERT INTO a VALUES (1)',
      'SELECT 1',
    ]);
  });
});

describe('createStorePool without a server', () => {
  it('names MYSQL_URL and hides the password when the server cannot be reached', async () => {
    const password = 'Sup3r-Secret-pw';
    const error = await createStorePool(`mysql://fleet:${password}@127.0.0.1:1/af_test_store_unreachable`, {
      connectTimeout: 2000,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'store_unreachable', retryable: true });
    const shown = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ''}`;
    expect(shown).toContain('MYSQL_URL');
    expect(shown).not.toContain(password);
  });
});

describe('store on a real server', () => {
  const database = `af_test_store_${RUN_ID}`;
  let pool: Pool;
  let repository: RunsRepository;
  let firstMigration: number[];
  let setupError: unknown;

  beforeAll(async () => {
    try {
      pool = await createStorePool(databaseUrl(database));
      repository = new RunsRepository(pool);
      firstMigration = await migrate(pool);
    } catch (error) {
      setupError = error;
    }
  });

  // A failed beforeAll only marks the tests skipped; rethrowing per test makes a missing server a failure.
  beforeEach(() => {
    if (setupError !== undefined) throw setupError;
  });

  afterAll(async () => {
    if (pool) await dropAndEnd(pool, database);
  });

  it('captures no stack per query (mysql2 `trace`: a few % of a worker’s CPU)', async () => {
    const core = (pool as unknown as { pool: { config: { connectionConfig: { trace: boolean } } } }).pool;
    expect(core.config.connectionConfig.trace).toBe(false);
    await expect(pool.query('SELECT no_such_column FROM agent_runs')).rejects.toMatchObject({
      code: 'ER_BAD_FIELD_ERROR',
    });
  });

  describe('migrate', () => {
    it('creates the tables, and a second run applies nothing', async () => {
      expect(firstMigration).toEqual(ALL_VERSIONS);
      expect(await tables(pool)).toEqual(
        expect.arrayContaining(['agent_runs', 'agent_steps', 'schema_migrations']),
      );
      expect(await migrate(pool)).toEqual([]);
      expect(await count(pool, 'SELECT COUNT(*) AS n FROM schema_migrations')).toBe(ALL_VERSIONS.length);
    });

    it('applies the schema once when two processes migrate at the same time', async () => {
      const fresh = `af_test_store_${RUN_ID}_race`;
      const [a, b] = await Promise.all([
        createStorePool(databaseUrl(fresh)),
        createStorePool(databaseUrl(fresh)),
      ]);
      try {
        const results = await Promise.all([migrate(a), migrate(b)]);
        expect(results.flat().sort((x, y) => x - y)).toEqual(ALL_VERSIONS);
        expect(await count(a, 'SELECT COUNT(*) AS n FROM schema_migrations')).toBe(ALL_VERSIONS.length);
        expect(await tables(b)).toEqual(await tables(a));
      } finally {
        await b.end();
        await dropAndEnd(a, fresh);
      }
    });

    it('refuses a migration that was changed after it was applied, and frees its lock', async () => {
      const [original] = await loadMigrations();
      await pool.query("UPDATE schema_migrations SET checksum = REPEAT('0', 64) WHERE version = 1");
      try {
        const error = await migrate(pool).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(StoreError);
        expect(error).toMatchObject({ code: 'migration_checksum' });
        expect((error as Error).message).toContain('001_runs_and_steps.sql was changed');
      } finally {
        await pool.query('UPDATE schema_migrations SET checksum = ? WHERE version = 1', [original?.checksum]);
      }
      expect(await migrate(pool, { lockTimeoutSeconds: 1 })).toEqual([]);
    });

    it('applies a new migration after the ones already applied', async () => {
      const directory = await mkdtemp(join(tmpdir(), 'af-migrations-'));
      try {
        await cp(MIGRATIONS_DIRECTORY, directory, { recursive: true });
        await writeFile(
          join(directory, '999_extra.sql'),
          '-- a comment that ends with a semicolon;\nCREATE TABLE IF NOT EXISTS extra_a (id INT PRIMARY KEY);\n' +
            'CREATE TABLE IF NOT EXISTS extra_b (id INT PRIMARY KEY);\n',
        );
        expect(await migrate(pool, { directory })).toEqual([999]);
        expect(await tables(pool)).toEqual(expect.arrayContaining(['extra_a', 'extra_b']));
        expect(await migrate(pool, { directory })).toEqual([]);
      } finally {
        await rm(directory, { recursive: true, force: true });
      }
    });
  });

  describe('pool', () => {
    it('runs every session in UTC', async () => {
      const [rows] = await pool.query<RowDataPacket[]>('SELECT @@session.time_zone AS tz');
      expect(rows[0]?.['tz']).toBe('+00:00');
    });

    it('never lets a session read backslashes literally (the driver escapes with them)', async () => {
      const [rows] = await pool.query<RowDataPacket[]>('SELECT @@session.sql_mode AS mode');
      expect(String(rows[0]?.['mode'])).not.toContain('NO_BACKSLASH_ESCAPES');
      // A server configured with it: the session set-up takes it out.
      const connection = await pool.getConnection();
      try {
        await connection.query("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES')");
        await connection.query(SESSION_SETUP);
        const [after] = await connection.query<RowDataPacket[]>('SELECT @@session.sql_mode AS mode');
        expect(String(after[0]?.['mode'])).not.toContain('NO_BACKSLASH_ESCAPES');
        const hostile = "it\\'s'); DROP TABLE agent_runs; -- \\";
        const [echo] = await connection.query<RowDataPacket[]>('SELECT ? AS v', [hostile]);
        expect(echo[0]?.['v']).toBe(hostile);
      } finally {
        connection.release();
      }
    });
  });

  describe('RunsRepository', () => {
    const startedAt = new Date('2026-11-30T08:15:30.123Z');
    const finishedAt = new Date('2026-11-30T08:16:02.987Z');

    it('stores a run and its steps and reads back exactly what was written', async () => {
      const jobId = 'Job-Roundtrip-1';
      const metadata = { batch: 'nightly-2026-11-30', report: 'q1-top-customers', nested: { n: 1 } };
      await repository.startRun({
        jobId,
        task: 'Find the top 3 customers by Q1 2024 sales',
        model: 'gpt-4-turbo-preview',
        protocol: 'tools',
        agent: 'default',
        prices: { inputPerMillion: 10, cachedInputPerMillion: 2.5, outputPerMillion: 30 },
        batchId: 'nightly-2026-11-30',
        metadata,
        attempt: 1,
        startedAt,
      });
      const running = await repository.getRun(jobId);
      expect(running).toMatchObject({
        status: 'running',
        stopReason: null,
        attempts: 1,
        startedAt,
        finishedAt: null,
      });
      expect(Math.abs((running?.updatedAt.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);

      const steps = [
        trace(1),
        trace(2, { kind: 'answer', actions: [], observations: ['Ada, Grace, Linus'] }),
      ];
      await repository.appendSteps(jobId, steps);
      const result: AgentResult = {
        jobId,
        status: 'succeeded',
        stopReason: 'answer',
        answer: 'Ada, Grace and Linus; emails sent.',
        steps: 2,
        toolCalls: 2,
        usage: {
          promptTokens: 3100,
          completionTokens: 420,
          totalTokens: 3520,
          cachedPromptTokens: 1024,
          reasoningTokens: 128,
          estimated: true,
          costUsd: 0.0436,
          flexSavedUsd: 0.0123,
        },
        error: null,
      };
      await repository.finishRun(result, finishedAt);

      const run = await repository.getRun(jobId);
      expect(run).toEqual({
        jobId,
        batchId: 'nightly-2026-11-30',
        task: 'Find the top 3 customers by Q1 2024 sales',
        model: 'gpt-4-turbo-preview',
        protocol: 'tools',
        agent: 'default',
        tenant: null,
        parentJobId: null,
        status: 'succeeded',
        stopReason: 'answer',
        stopDetail: null,
        answer: 'Ada, Grace and Linus; emails sent.',
        steps: 2,
        toolCalls: 2,
        promptTokens: 3100,
        completionTokens: 420,
        totalTokens: 3520,
        cachedPromptTokens: 1024,
        reasoningTokens: 128,
        usageEstimated: true,
        costUsd: 0.0436,
        flexSavedUsd: 0.0123,
        prices: { inputPerMillion: 10, cachedInputPerMillion: 2.5, outputPerMillion: 30 },
        error: null,
        metadata,
        attempts: 1,
        startedAt,
        finishedAt,
        updatedAt: expect.any(Date),
        stepsDeletedAt: null,
      });
      expect(typeof run?.costUsd).toBe('number');

      const stored = await repository.getSteps(jobId);
      expect(stored).toEqual(
        steps.map((step) => ({
          id: expect.any(Number),
          jobId,
          step: step.step,
          kind: step.kind,
          actions: step.actions,
          observation: step.observations.join('\n'),
          promptTokens: 812,
          completionTokens: 64,
          cachedPromptTokens: 0,
          reasoningTokens: 0,
          costUsd: 0.0123456789,
          latencyMs: 1250,
          modelCalls: 2,
          error: null,
          observations: step.observations,
          modelLatencyMs: step.modelLatencyMs,
          events: [],
          createdAt: expect.any(Date),
        })),
      );
    });

    it('stores the error of a failed run as JSON', async () => {
      const jobId = 'job-failed';
      await repository.startRun({ jobId, task: 't', model: 'm', protocol: 'json', attempt: 1 });
      const error = {
        kind: 'model_api' as const,
        code: 'http_500',
        message: 'upstream said "no"',
        retryable: true,
      };
      await repository.finishRun({
        jobId,
        status: 'failed',
        stopReason: 'error',
        answer: null,
        steps: 0,
        toolCalls: 0,
        usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
        error,
      });
      expect(await repository.getRun(jobId)).toMatchObject({
        status: 'failed',
        stopReason: 'error',
        error,
        batchId: null,
        metadata: null,
      });
    });

    it('stores a structured output, keeps "no value" apart from "no schema", and clears it on a restart', async () => {
      const base = { task: 't', model: 'm', protocol: 'tools' as const, attempt: 1 };
      const finished = (jobId: string, output?: unknown): AgentResult => ({
        jobId,
        status: output === null ? 'stopped' : 'succeeded',
        stopReason: output === null ? 'max_steps' : 'answer',
        answer: output === undefined ? 'plain' : JSON.stringify(output),
        steps: 1,
        toolCalls: 0,
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, costUsd: 0 },
        error: null,
        ...(output === undefined ? {} : { output }),
      });
      const digest = {
        region: 'north',
        total: 12.5,
        top: [{ product: 'widget', units: 3 }],
        note: 'ünï "q"',
      };
      for (const jobId of ['job-output', 'job-output-null', 'job-no-schema']) {
        await repository.startRun({ ...base, jobId });
      }
      await repository.finishRun(finished('job-output', digest));
      await repository.finishRun(finished('job-output-null', null));
      await repository.finishRun(finished('job-no-schema'));

      const withValue = await repository.getRun('job-output');
      expect(withValue?.output).toEqual(digest);
      expect(resultOfRun(withValue!)?.output).toEqual(digest);
      const withNull = await repository.getRun('job-output-null');
      expect(withNull).toHaveProperty('output', null);
      expect(resultOfRun(withNull!)).toHaveProperty('output', null);
      const without = await repository.getRun('job-no-schema');
      expect(without).not.toHaveProperty('output');
      expect(resultOfRun(without!)).not.toHaveProperty('output');
      const [raw] = await pool.query<RowDataPacket[]>(
        'SELECT output IS NULL AS sqlNull, output FROM agent_runs WHERE job_id IN (?) ORDER BY job_id',
        [['job-no-schema', 'job-output-null']],
      );
      expect(raw.map((row) => [Number(row['sqlNull']), row['output']])).toEqual([
        [1, null],
        [0, 'null'],
      ]);

      await repository.startRun({ ...base, jobId: 'job-output', attempt: 2 });
      expect(await repository.getRun('job-output')).not.toHaveProperty('output');
    });

    it('overwrites a step reported again instead of adding a row', async () => {
      const jobId = 'job-resumed-steps';
      await repository.appendSteps(jobId, [trace(1), trace(2)]);
      await repository.appendSteps(jobId, [
        trace(2, { observations: ['redone'], error: 'tool timed out' }),
        trace(3),
      ]);
      expect(await count(pool, 'SELECT COUNT(*) AS n FROM agent_steps WHERE job_id = ?', [jobId])).toBe(3);
      const steps = await repository.getSteps(jobId);
      expect(steps.map((step) => step.step)).toEqual([1, 2, 3]);
      expect(steps[1]).toMatchObject({ observation: 'redone', error: 'tool timed out' });
    });

    it('does nothing for an empty list of steps', async () => {
      await repository.appendSteps('job-no-steps', []);
      expect(await repository.getSteps('job-no-steps')).toEqual([]);
    });

    it('keeps the first start time and counts attempts when a job starts again', async () => {
      const jobId = 'job-retried';
      const base = { jobId, task: 'retry me', model: 'gpt-4o-mini', protocol: 'tools' as const };
      await repository.startRun({ ...base, attempt: 1, startedAt });
      await repository.finishRun(
        {
          jobId,
          status: 'stopped',
          stopReason: 'deadline',
          answer: null,
          steps: 3,
          toolCalls: 1,
          usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.001 },
          error: null,
        },
        finishedAt,
      );
      await repository.startRun({ ...base, attempt: 2, startedAt: new Date('2026-12-01T00:00:00.000Z') });
      expect(await repository.getRun(jobId)).toMatchObject({
        status: 'running',
        stopReason: null,
        finishedAt: null,
        attempts: 2,
        startedAt,
      });
      // A restart the queue does not count as an attempt (a stalled job) still counts here.
      await repository.startRun({ ...base, attempt: 2 });
      expect(await repository.getRun(jobId)).toMatchObject({ attempts: 3, startedAt });
      expect(await count(pool, 'SELECT COUNT(*) AS n FROM agent_runs WHERE job_id = ?', [jobId])).toBe(1);
    });

    it('records the starts of several runs in one statement, a new one and one starting again', async () => {
      const again = { jobId: 'job-many-1', task: 'first', model: 'gpt-4o-mini', protocol: 'json' as const };
      await repository.startRun({ ...again, attempt: 1, startedAt });
      await repository.startRuns([
        { ...again, attempt: 2, startedAt: new Date('2026-12-01T00:00:00.000Z') },
        { jobId: 'job-many-2', task: 'second', model: 'gpt-4o', protocol: 'tools', attempt: 1, startedAt },
      ]);
      expect(await repository.getRun('job-many-1')).toMatchObject({ task: 'first', attempts: 2, startedAt });
      expect(await repository.getRun('job-many-2')).toMatchObject({
        task: 'second',
        model: 'gpt-4o',
        protocol: 'tools',
        status: 'running',
        attempts: 1,
        startedAt,
      });
      await repository.startRuns([]);
    });

    it('writes starts, steps and finishes in one query, and names a finish whose run was never started', async () => {
      const journalPool = await createStorePool(databaseUrl(database), {
        connectionLimit: 1,
        multipleStatements: true,
      });
      try {
        const journal = new RunsRepository(journalPool);
        const steps = [1, 2].map((step) => ({
          jobId: 'job-journal-1',
          trace: trace(step, { observations: [`tables ${step}`] }),
        }));
        const usage = { promptTokens: 30, completionTokens: 3, totalTokens: 33, costUsd: 0.0003 };
        const done = (jobId: string) => ({
          result: {
            jobId,
            status: 'succeeded' as const,
            stopReason: 'answer' as const,
            answer: 'two tables',
            steps: 2,
            toolCalls: 2,
            usage,
            error: null,
            output: { tables: 2 },
          },
          finishedAt,
        });
        const base = {
          task: 'journal',
          model: 'gpt-4o-mini',
          protocol: 'json' as const,
          attempt: 1,
          startedAt,
        };
        await journal.startRun({ ...base, jobId: 'job-journal-1' });
        const written = await journal.writeJournal({
          starts: [{ ...base, jobId: 'job-journal-2' }],
          steps,
          finishes: [done('job-journal-1'), done('job-journal-never')],
        });
        expect(written).toEqual({ notStarted: ['job-journal-never'] });
        expect(await repository.getRun('job-journal-1')).toMatchObject({
          status: 'succeeded',
          answer: 'two tables',
          output: { tables: 2 },
          steps: 2,
          finishedAt,
        });
        expect(await repository.getRun('job-journal-2')).toMatchObject({ status: 'running', startedAt });
        expect((await repository.getSteps('job-journal-1')).map((s) => s.observation)).toEqual([
          'tables 1',
          'tables 2',
        ]);
        expect(await repository.getRun('job-journal-never')).toBeNull();
        // One kind alone is one statement (its reply is not a list).
        expect(
          await journal.writeJournal({ starts: [], steps: [], finishes: [done('job-journal-2')] }),
        ).toEqual({
          notStarted: [],
        });
        expect(await journal.writeJournal({ starts: [], steps: [], finishes: [] })).toEqual({
          notStarted: [],
        });
      } finally {
        await journalPool.end();
      }
    });

    it('the store pool runs one statement per query unless told otherwise', async () => {
      await expect(pool.query('SELECT 1; SELECT 2')).rejects.toThrow(/syntax/i);
    });

    it('treats job ids as case-sensitive', async () => {
      await repository.startRun({
        jobId: 'job-case',
        task: 'lower',
        model: 'm',
        protocol: 'tools',
        attempt: 1,
      });
      await repository.startRun({
        jobId: 'JOB-CASE',
        task: 'upper',
        model: 'm',
        protocol: 'tools',
        attempt: 1,
      });
      expect((await repository.getRun('job-case'))?.task).toBe('lower');
      expect((await repository.getRun('JOB-CASE'))?.task).toBe('upper');
    });

    it('returns null for an unknown run and refuses to finish it', async () => {
      expect(await repository.getRun('job-never-started')).toBeNull();
      const finishing = repository.finishRun({
        jobId: 'job-never-started',
        status: 'succeeded',
        stopReason: 'answer',
        answer: 'x',
        steps: 1,
        toolCalls: 0,
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, costUsd: 0 },
        error: null,
      });
      await expect(finishing).rejects.toMatchObject({ code: 'run_not_found' });
    });
  });
});
