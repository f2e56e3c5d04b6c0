// MYSQL_READ_URL on a real MariaDB replica (docs/store.md#replicas): a primary and its replica of this test's own
// (test/support/private-mariadb-replica.ts), a worker writing to the primary, `npm run trace` and the console
// reading the replica through a SELECT-only account. A replica that falls behind answers as it was, and catches up.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { runTraceCommand } from '../../../src/console/trace-command.js';
import { createReadPool } from '../../../src/store/read-pool.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startReplicaPair, type PrivateReplicaPair } from '../../support/private-mariadb-replica.js';
import { stepsModel } from '../../support/steps-model.js';

const READER_PASSWORD = `rd-${randomBytes(8).toString('hex')}`;

let pair: PrivateReplicaPair | undefined;
let ns: FleetNamespace;
let model: ScriptedModelServer | undefined;
let worker: WorkerHandle | undefined;
let config: { MYSQL_URL: string; MYSQL_READ_URL: string };
let setupError: unknown;

beforeAll(async () => {
  try {
    ns = createNamespace('mariadb-replica');
    pair = await startReplicaPair();
    const primary = await pair.admin('primary');
    try {
      // Created on the primary, replicated: the replica's account can only read.
      for (const host of ['localhost', '127.0.0.1']) {
        await primary.query(`CREATE USER 'reader'@'${host}' IDENTIFIED BY ?`, [READER_PASSWORD]);
        await primary.query(`GRANT SELECT ON agent_fleet.* TO 'reader'@'${host}'`);
      }
    } finally {
      await primary.end();
    }
    config = {
      MYSQL_URL: `mysql://root@127.0.0.1:${pair.primaryPort}/agent_fleet`,
      MYSQL_READ_URL: `mysql://reader:${READER_PASSWORD}@127.0.0.1:${pair.replicaPort}/agent_fleet`,
    };
    model = await startScriptedModel({ rules: [stepsModel] });
    worker = startWorker(ns, { OPENAI_BASE_URL: model.baseURL, ...config });
    await worker.waitForOutput(/worker started/, 60_000);
  } catch (error) {
    setupError = error;
  }
}, 120_000);

afterAll(async () => {
  if (worker) await killWorker(worker);
  await model?.close();
  await pair?.close();
  await ns?.cleanup();
});

async function trace(jobId: string): Promise<{ code: number; text: string }> {
  let text = '';
  const io = { stdout: (t: string) => (text += t), stderr: (t: string) => (text += t) };
  const code = await runTraceCommand(['--job', jobId], () => config, io);
  return { code, text };
}

describe('a real MariaDB replica as MYSQL_READ_URL', () => {
  it("serves the trace and the console with the worker's runs once replicated", async () => {
    if (setupError !== undefined) throw setupError;
    const { jobId } = await ns.client.enqueue({ task: 'job one: 2 steps' });
    expect((await ns.client.waitForResult(jobId, { timeoutMs: 30_000 })).status).toBe('succeeded');
    await pair!.caughtUp();
    const shown = await trace(jobId);
    expect(shown.code).toBe(0);
    expect(shown.text).toContain('one done in 2 steps');
    const pool = await createReadPool(config, { connectionLimit: 1 });
    try {
      const loaded = await new ConsoleStore(pool).loadRun(jobId);
      expect(loaded?.run).toMatchObject({ status: 'succeeded' });
      expect(loaded?.steps).toHaveLength(2);
      // The replica refuses writes (read-only, and its account may only SELECT): the read pool needed none.
      await expect(pool.query('CREATE TABLE agent_fleet.t (a INT)')).rejects.toThrow(/read-only|denied/);
    } finally {
      await pool.end();
    }
  }, 60_000);

  it('answers as of its lag while behind, naming MYSQL_READ_URL without its password, then catches up', async () => {
    if (setupError !== undefined) throw setupError;
    await pair!.pause();
    let jobId: string;
    try {
      ({ jobId } = await ns.client.enqueue({ task: 'job two: 1 steps' }));
      expect((await ns.client.waitForResult(jobId, { timeoutMs: 30_000 })).status).toBe('succeeded');
      const behind = await trace(jobId);
      expect(behind.code).toBe(1);
      expect(behind.text).toContain(`(MYSQL_READ_URL=mysql://reader:`);
      expect(behind.text).not.toContain(READER_PASSWORD);
    } finally {
      await pair!.resume();
    }
    await pair!.caughtUp();
    const caught = await trace(jobId);
    expect(caught.code).toBe(0);
    expect(caught.text).toContain('two done in 1 steps');
  }, 60_000);
});
