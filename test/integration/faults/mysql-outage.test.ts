// Fault suite, MySQL outage: a batch whose workers reach MariaDB (the store and the data database) through a
// TCP proxy that is cut for 60 s mid-batch (FAULT_MYSQL_OUTAGE_MS to try shorter locally), then restored.
// No task ends failed because of the outage: every one succeeds, with its agent_runs row, its steps and
// exactly one result.
import { turnsIn } from '../../../src/testing/transcript.js';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { seedDemoDatabase } from '../../../src/demo/seed-demo-database.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { printFigures, seconds } from '../../support/fault-figures.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { notExactlyOnce, resultsPerJob, runRecords } from '../../support/fleet-counts.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { durationFromEnv } from '../../support/seeded-random.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const ADMIN = 'mysql://root@127.0.0.1:3306';
const OUTAGE_MS = durationFromEnv('FAULT_MYSQL_OUTAGE_MS', 60_000);
const TASKS = 20;
const QUERIES = 3;
const suffix = randomBytes(3).toString('hex');
const DATA_DB = `af_test_faultdata_${suffix}`;
const READER = `af_fr_${suffix}`;

// "sql job <name>": QUERIES distinct queries on the data database, one per step, then the answer.
function sqlTasksModel(request: RecordedRequest): ScriptedReply | undefined {
  const match = /^sql job (\S+)/.exec(String(request.messages[1]?.content ?? ''));
  if (!match) return undefined;
  const step = turnsIn(request.messages) + 1;
  if (step > QUERIES) return { answer: `${match[1]}: ${QUERIES} queries done` };
  return {
    actions: [{ tool: 'sql_query', args: { sql: `SELECT COUNT(*) AS n FROM customers WHERE id > ${step}` } }],
  };
}

let model: ScriptedModelServer;
let ns: FleetNamespace;
let proxy: TcpProxy;
const workers: WorkerHandle[] = [];
let reachedCut: () => void = () => undefined;
const cutReached = new Promise<void>((resolve) => (reachedCut = resolve));

setupOrFail(async () => {
  await seedDemoDatabase({
    adminUrl: ADMIN,
    database: DATA_DB,
    readerUser: READER,
    readerPassword: 'reader-pw',
  });
  ns = createNamespace('faults-mysql');
  proxy = await startTcpProxy(3306);
  model = await startScriptedModel({
    latencyMs: 500,
    rules: [
      (request) => {
        if (model.requests.length >= 15) reachedCut();
        return sqlTasksModel(request);
      },
    ],
  });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await proxy?.close();
  await ns?.cleanup();
  await model?.close();
  const admin = await mysql.createConnection(ADMIN);
  await admin.query(`DROP DATABASE IF EXISTS \`${DATA_DB}\``);
  await admin.query(`DROP USER IF EXISTS '${READER}'@'%'`);
  await admin.end();
});

it('a 60 s MySQL outage mid-batch: every task succeeds with its row, its steps and one result', async () => {
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        MYSQL_URL: `mysql://root@127.0.0.1:${proxy.port}/${ns.database}`,
        DATA_MYSQL_URL: `mysql://${READER}:reader-pw@127.0.0.1:${proxy.port}/${DATA_DB}`,
        OPENAI_BASE_URL: model.baseURL,
        WORKER_CONCURRENCY: '5',
        METRICS_PORT: '0',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
  const startedAt = Date.now();
  const { batchId, jobIds } = await ns.client.enqueueBatch({
    tasks: Array.from({ length: TASKS }, (_, i) => ({ task: `sql job q${i}`, tools: ['sql_query'] })),
    name: 'mysql outage',
  });

  await cutReached;
  const cutAt = Date.now();
  await proxy.cut();
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  await proxy.restore();
  const outageMs = Date.now() - cutAt;

  const results: AgentResult[] = await Promise.all(
    jobIds.map((id) => ns.client.waitForResult(id, { timeoutMs: 300_000 })),
  );
  const recoveredMs = Date.now() - cutAt - outageMs;
  const durationMs = Date.now() - startedAt;
  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  const published = await resultsPerJob(REDIS_URL, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  printFigures('mysql-outage', {
    tasks: TASKS,
    workers: workers.length,
    outageS: seconds(outageMs),
    succeeded: results.filter((r) => r.status === 'succeeded').length,
    failed: results.filter((r) => r.status === 'failed').length,
    modelCalls: model.requests.length,
    expectedCalls: TASKS * (QUERIES + 1),
    maxAttempts: Math.max(0, ...[...records.values()].flat().map((r) => r.attempts)),
    lastResultAfterRestoreS: seconds(recoveredMs),
    durationS: seconds(durationMs),
  });

  expect(
    results.filter((r) => r.status !== 'succeeded').map((r) => `${r.jobId}: ${r.status} ${r.error?.message}`),
  ).toEqual([]);
  results.forEach((r) => expect(r.steps, r.jobId).toBe(QUERIES + 1));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  for (const id of jobIds) {
    const [record] = records.get(id) ?? [];
    expect(record, id).toMatchObject({ status: 'succeeded', steps: QUERIES + 1, stepRows: QUERIES + 1 });
  }
  expect(batch.summary).toMatchObject({ tasks: TASKS, succeeded: TASKS, failed: 0 });
  expect(model.failures).toEqual([]);
}, 480_000);
