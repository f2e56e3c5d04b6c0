// A batch on Redis behind Sentinel: a master, a replica and three sentinels of the test's own
// (test/support/redis-sentinel.ts), two real worker processes and the client library on REDIS_SENTINELS and
// REDIS_SENTINEL_NAME. Every task ends with one result and one agent_runs row, the batch summary is complete, and
// the batch's budget was booked and settled in the spend ledger, on the master the sentinels name.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis, type RedisClient } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { notExactlyOnce, runRecords } from '../../support/fleet-counts.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { connect, waitFor } from '../../support/redis-processes.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

const TASKS = 12;
const plans = Array.from({ length: TASKS }, (_, i) => ({ name: `c${i}`, steps: 2 + (i % 3) }));

let sentinel: LocalSentinel;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];

setupOrFail(async () => {
  sentinel = await startLocalSentinel();
  // The namespace's database; its keys live on the test's own Redis, under a prefix of their own.
  ns = { ...createNamespace('sentinel'), prefix: `test-sentinel-${randomBytes(4).toString('hex')}` };
  const target = { redisSentinels: sentinel.sentinels, redisSentinelName: sentinel.name };
  client = new FleetClient({ ...target, prefix: ns.prefix });
  redis = createRedis(
    redisTarget({ sentinels: sentinel.sentinels, sentinelName: sentinel.name }),
    'producer',
  );
  model = await startScriptedModel({ latencyMs: 50, rules: [stepsModel] });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await client?.close();
  if (redis) {
    await deleteKeysWithPrefix(redis, ns.prefix);
    redis.disconnect();
  }
  await ns?.cleanup();
  await model?.close();
  await sentinel?.close();
});

it('a batch through two workers on Redis behind Sentinel: every task one result and one row, the ledger used', async () => {
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        REDIS_SENTINELS: sentinel.sentinels,
        REDIS_SENTINEL_NAME: sentinel.name,
        OPENAI_BASE_URL: model.baseURL,
        AGENT_PROTOCOL: 'json',
        AGENT_MAX_COST_USD: '1',
        WORKER_CONCURRENCY: '5',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
  const tasks = plans.map((p) => ({ task: `job ${p.name}: ${p.steps} steps` }));
  const { batchId, jobIds } = await client.enqueueBatch({
    tasks,
    name: 'behind Sentinel',
    budget: { maxCostUsd: 5 },
  });

  const status = await client.waitForBatch(batchId, { timeoutMs: 120_000 });
  const results = await Promise.all(jobIds.map((id) => client.getResult(id)));
  const records = await runRecords(ns);

  expect(status.state).toBe('completed');
  expect(status.summary).toMatchObject({ batchId, tasks: TASKS, succeeded: TASKS, failed: 0, stopped: 0 });
  expect(results.map((r) => r?.status)).toEqual(plans.map(() => 'succeeded'));
  plans.forEach((p, i) => expect(results[i]?.steps, p.name).toBe(p.steps));
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  expect(model.requests.length).toBe(plans.reduce((sum, p) => sum + p.steps, 0));

  // The batch's budget scope holds what its tasks spent, every reservation settled.
  const spend = await new SpendLedger({ redis, prefix: ns.prefix }).getSpend(`batch:${batchId}`);
  expect(spend.usedUsd).toBeGreaterThan(0);
  expect(spend.usedUsd).toBeCloseTo(status.summary.usage.costUsd, 6);
  expect(spend.liveReservations).toBe(0);
  expect(spend.capUsd).toBe(5);
  // Written on the master, and replicated.
  const replica = connect(sentinel.replicaPort);
  try {
    await waitFor(async () => (await replica.keys(`${ns.prefix}:*`)).length > 0, 'the keys replicated');
  } finally {
    replica.disconnect();
  }
}, 240_000);
