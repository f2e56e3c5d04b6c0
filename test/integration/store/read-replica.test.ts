// MYSQL_READ_URL (docs/store.md#replicas): the run console, `npm run report`, `npm run trace`, the HTTP API's
// batch reads from MySQL and the forecasts' history read from it; the worker writes and reads MYSQL_URL. The
// "replica" here is another database on the same server holding different rows under the same ids, so which one
// answered shows where each read went.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreResultArchive } from '../../../producers/result-archive.js';
import { createApiServer } from '../../../producers/http-api.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { runTraceCommand } from '../../../src/console/trace-command.js';
import { runReportCommand } from '../../../src/reports/report-command.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { createReadPool, readStoreOf } from '../../../src/store/read-pool.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startHttpProcess } from '../../support/http-process.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { StoreError } from '../../../src/kernel/errors.js';
import { stepsModel } from '../../support/steps-model.js';

const ID = randomBytes(4).toString('hex');
const USER = 'operator';
const PASSWORD = `pw-${ID}-viewer`;
const TOKEN = `token-${ID}-${randomBytes(8).toString('hex')}`;

let ns: FleetNamespace;
let replicaDatabase: string;
let replicaUrl: string;
let primary: Pool;
let replica: Pool;
let model: ScriptedModelServer | undefined;
let worker: WorkerHandle | undefined;
let setupError: unknown;

/** One run, one batch and one old finished run of the forecast's agent, worded after the database. */
async function seed(pool: Pool, where: 'primary' | 'replica'): Promise<void> {
  const jobIds = where === 'primary' ? ['run-1'] : ['run-1', 'run-2'];
  await pool.query(
    `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, created_at) VALUES (?, ?, ?, ?, 'running', NOW(3))`,
    [`batch-${ID}`, `${where} batch`, jobIds.length, JSON.stringify(jobIds)],
  );
  for (const jobId of jobIds) {
    await pool.query(
      `INSERT INTO agent_runs (job_id, batch_id, task, model, protocol, status, steps, started_at)
       VALUES (?, ?, ?, 'gpt-4o', 'tools', 'running', 0, NOW(3))`,
      [jobId, `batch-${ID}`, `a task written on the ${where}`],
    );
  }
  await pool.query(
    `INSERT INTO agent_runs (job_id, agent, task, model, protocol, status, steps, cost_usd, started_at, finished_at)
     VALUES ('history-1', 'reader', 'past', 'gpt-4o', 'tools', 'succeeded', 1, ?, NOW(3), NOW(3))`,
    [where === 'primary' ? 0.01 : 0.5],
  );
}

beforeAll(async () => {
  try {
    ns = createNamespace('read-replica');
    replicaDatabase = `${ns.database}_replica`;
    replicaUrl = ns.mysqlUrl.replace(/\/[^/]+$/, `/${replicaDatabase}`);
    primary = await createStorePool(ns.mysqlUrl, { connectionLimit: 2 });
    replica = await createStorePool(replicaUrl, { connectionLimit: 2 });
    await migrate(primary);
    await migrate(replica);
    await seed(primary, 'primary');
    await seed(replica, 'replica');
  } catch (error) {
    setupError = error;
  }
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await model?.close();
  await replica?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(replicaDatabase)}`);
  await replica?.end();
  await primary?.end();
  await ns?.cleanup();
});

const both = () => ({ MYSQL_URL: ns.mysqlUrl, MYSQL_READ_URL: replicaUrl });

function output(): { io: { stdout: (t: string) => void; stderr: (t: string) => void }; text: () => string } {
  let text = '';
  return { io: { stdout: (t) => (text += t), stderr: (t) => (text += t) }, text: () => text };
}

describe('MYSQL_READ_URL', () => {
  it('is the primary when unset or the same as MYSQL_URL', () => {
    if (setupError !== undefined) throw setupError;
    expect(readStoreOf({ MYSQL_URL: ns.mysqlUrl })).toEqual({
      url: ns.mysqlUrl,
      variable: 'MYSQL_URL',
      replica: false,
    });
    expect(readStoreOf({ MYSQL_URL: ns.mysqlUrl, MYSQL_READ_URL: ns.mysqlUrl }).replica).toBe(false);
    expect(readStoreOf(both())).toEqual({ url: replicaUrl, variable: 'MYSQL_READ_URL', replica: true });
  });

  it('serves the run console of the real board process, and its batch pages', async () => {
    if (setupError !== undefined) throw setupError;
    const board = await startHttpProcess(
      'producers/board.ts',
      {
        BOARD_USER: USER,
        BOARD_PASSWORD: PASSWORD,
        BOARD_PORT: '0',
        REDIS_URL,
        QUEUE_PREFIX: ns.prefix,
        ...both(),
      },
      /board listening/,
    );
    try {
      const base = `http://127.0.0.1:${board.listening.port}`;
      const headers = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
      const run = await fetch(`${base}/console/runs/run-1`, { headers });
      expect(run.status).toBe(200);
      const page = await run.text();
      expect(page).toContain('a task written on the replica');
      expect(page).not.toContain('a task written on the primary');
      const batch = await fetch(`${base}/console/batches/batch-${ID}`, { headers });
      expect(batch.status).toBe(200);
      expect(await batch.text()).toContain('replica batch');
      // A run only the replica has is found there.
      expect((await fetch(`${base}/console/runs/run-2`, { headers })).status).toBe(200);
      // One it does not have (yet: a replica may be behind) is not found there, and the page says where it looked.
      for (const path of ['runs/not-replicated-yet', 'batches/not-replicated-yet']) {
        const missing = await fetch(`${base}/console/${path}`, { headers });
        expect(missing.status).toBe(404);
        expect(await missing.text()).toContain('MYSQL_READ_URL');
      }
    } finally {
      await board.stop();
    }
  });

  it("answers the real API's batch reads from MySQL from the replica", async () => {
    if (setupError !== undefined) throw setupError;
    const api = await startHttpProcess(
      'producers/api.ts',
      { API_TOKEN: TOKEN, API_PORT: '0', REDIS_URL, QUEUE_PREFIX: ns.prefix, ...both() },
      /API listening/,
    );
    try {
      const response = await fetch(`http://127.0.0.1:${api.listening.port}/v1/batches/batch-${ID}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { jobIds: string[] }).jobIds).toEqual(['run-1', 'run-2']);
    } finally {
      await api.stop();
    }
  });

  it("reads the forecasts' history from the replica, and from the primary without one", async () => {
    if (setupError !== undefined) throw setupError;
    const since = new Date(Date.now() - 86_400_000);
    const fromReplica = new StoreResultArchive(both());
    const fromPrimary = new StoreResultArchive(ns.mysqlUrl);
    try {
      expect(await fromReplica.costHistory('reader', 'gpt-4o', since)).toMatchObject({
        runs: 1,
        meanUsd: 0.5,
      });
      expect(await fromPrimary.costHistory('reader', 'gpt-4o', since)).toMatchObject({
        runs: 1,
        meanUsd: 0.01,
      });
      expect((await fromReplica.getBatch(`batch-${ID}`))?.jobIds).toEqual(['run-1', 'run-2']);
    } finally {
      await fromReplica.close();
      await fromPrimary.close();
    }
  });

  it('makes `npm run report` read the replica and record the report on the primary', async () => {
    if (setupError !== undefined) throw setupError;
    const out = output();
    const dir = await mkdtemp(join(tmpdir(), 'af-read-replica-'));
    try {
      expect(await runReportCommand(['--batch', `batch-${ID}`, '--out', dir], both, out.io)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(out.text()).toContain('replica batch');
    expect(out.text()).not.toContain('primary batch');
    const count = async (pool: Pool) =>
      Number((await pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM batch_reports'))[0][0]?.['n']);
    expect(await count(primary)).toBe(1);
    expect(await count(replica)).toBe(0);
  });

  it('makes `npm run report` read the primary when the replica is behind it, never recording a stale report', async () => {
    if (setupError !== undefined) throw setupError;
    const batchId = `lagging-${ID}`;
    // Completed on the primary, its report recorded by the aggregator; the replica has not caught up yet.
    await primary.query(
      `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, summary, created_at, completed_at)
       VALUES (?, 'completed on the primary', 0, '[]', 'completed', '{}', NOW(3), NOW(3))`,
      [batchId],
    );
    await primary.query(
      `INSERT INTO batch_reports (batch_id, state, summary, markdown, html) VALUES (?, 'completed', '{}', '# done', '<p>done</p>')`,
      [batchId],
    );
    await replica.query(
      `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, created_at)
       VALUES (?, 'still running on the replica', 0, '[]', 'running', NOW(3))`,
      [batchId],
    );
    const out = output();
    const dir = await mkdtemp(join(tmpdir(), 'af-read-replica-'));
    try {
      expect(await runReportCommand(['--batch', batchId, '--out', dir], both, out.io)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(out.text()).toContain('completed on the primary');
    expect(out.text()).toContain('MYSQL_READ_URL');
    const [rows] = await primary.query<RowDataPacket[]>(
      'SELECT state FROM batch_reports WHERE batch_id = ?',
      [batchId],
    );
    expect(rows.map((row) => row['state'])).toEqual(['completed']);
  });

  it('makes `npm run trace` read the replica, and names MYSQL_READ_URL when a run is not there', async () => {
    if (setupError !== undefined) throw setupError;
    const fromReplica = output();
    expect(await runTraceCommand(['--job', 'run-1'], both, fromReplica.io)).toBe(0);
    expect(fromReplica.text()).toContain('a task written on the replica');
    const fromPrimary = output();
    expect(
      await runTraceCommand(['--job', 'run-1'], () => ({ MYSQL_URL: ns.mysqlUrl }), fromPrimary.io),
    ).toBe(0);
    expect(fromPrimary.text()).toContain('a task written on the primary');
    const missing = output();
    expect(await runTraceCommand(['--job', 'nowhere'], both, missing.io)).toBe(1);
    expect(missing.text()).toContain(`agent_runs of ${replicaDatabase} (MYSQL_READ_URL=`);
  });

  it('names MYSQL_READ_URL, its password hidden, when the replica cannot be reached', async () => {
    const failed = await createReadPool(
      {
        MYSQL_URL: 'mysql://root@127.0.0.1:3306/x',
        MYSQL_READ_URL: 'mysql://reader:s3cret-pw@127.0.0.1:1/x',
      },
      { connectTimeout: 2_000 },
    ).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(failed?.message).toMatch(
      /^MYSQL_READ_URL=mysql:\/\/reader:\*+@127\.0\.0\.1:1\/x: cannot use the store/,
    );
    expect(failed?.message).not.toContain('s3cret-pw');
  });

  it('names MYSQL_READ_URL, as a store unreachable, when the replica goes away after its pool was made', async () => {
    if (setupError !== undefined) throw setupError;
    const target = new URL(replicaUrl);
    const proxy = await startTcpProxy(Number(target.port || 3306), target.hostname);
    target.host = `127.0.0.1:${proxy.port}`;
    const archive = new StoreResultArchive({ MYSQL_URL: ns.mysqlUrl, MYSQL_READ_URL: target.href });
    try {
      // The pool is made, and answers.
      expect(await archive.getBatch(`batch-${ID}`)).toMatchObject({ state: 'running' });
      await proxy.cut();
      const failed = await archive.getResult('run-1').then(
        () => undefined,
        (error: unknown) => error,
      );
      // The API answers 503 for a retryable StoreError (a plain driver error was a 500 and an error line).
      expect(failed).toBeInstanceOf(StoreError);
      expect((failed as StoreError).retryable).toBe(true);
      expect((failed as Error).message).toMatch(
        /^MYSQL_READ_URL=mysql:\/\/\S+@127\.0\.0\.1:\d+\/\S+: cannot use the store/,
      );
    } finally {
      await archive.close();
      await proxy.close();
    }
  });

  it("keeps the API's health check on Redis alone: a replica down is no reason to take the API out", async () => {
    if (setupError !== undefined) throw setupError;
    const archive = new StoreResultArchive({
      MYSQL_URL: ns.mysqlUrl,
      MYSQL_READ_URL: 'mysql://reader:s3cret-pw@127.0.0.1:1/x',
    });
    const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, archive });
    const server = createServer(createApiServer({ client, token: TOKEN, logger: pino({ level: 'silent' }) }));
    try {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const health = await fetch(`${base}/healthz`);
      expect(await health.json()).toEqual({ status: 'ok' });
      expect(health.status).toBe(200);
      // What needs the replica says it is unavailable, and the API goes on answering.
      const unknown = await fetch(`${base}/v1/tasks/gone-from-redis`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(unknown.status).toBe(503);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await client.close();
      await archive.close();
    }
  });

  it('leaves the worker on MYSQL_URL: its runs are written there, never to the replica', async () => {
    if (setupError !== undefined) throw setupError;
    model = await startScriptedModel({ rules: [stepsModel] });
    worker = startWorker(ns, { OPENAI_BASE_URL: model.baseURL, MYSQL_READ_URL: replicaUrl });
    await worker.waitForOutput(/worker started/, 30_000);
    const { jobId } = await ns.client.enqueue({ task: 'job w: 2 steps' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result.status).toBe('succeeded');
    const onPrimary = await queryStore<{ status: string; steps: number }>(
      ns,
      'SELECT status, (SELECT COUNT(*) FROM agent_steps s WHERE s.job_id = r.job_id) AS steps FROM agent_runs r WHERE job_id = ?',
      [jobId],
    );
    expect(onPrimary.map((row) => [row.status, Number(row.steps)])).toEqual([['succeeded', 2]]);
    const [onReplica] = await replica.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM agent_runs WHERE job_id = ?',
      [jobId],
    );
    expect(Number(onReplica[0]?.['n'])).toBe(0);
  });
});
