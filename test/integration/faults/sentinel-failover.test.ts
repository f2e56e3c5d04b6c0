// Fault suite, Sentinel failover: a batch through 2 workers on Redis behind Sentinel (a master, a replica, three
// sentinels of the test's own); a third of the way in, SENTINEL FAILOVER makes the replica the master. The
// workers and the client follow the sentinels to it: every task ends with one result and one agent_runs row, and
// the batch summary is complete. A result the old master took after the promotion is lost with it; the worker
// that published it publishes it again on the new master (test/integration/faults/sentinel-lost-result.test.ts).
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis, type RedisClient } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { printFigures, seconds } from '../../support/fault-figures.js';
import { notExactlyOnce, resultsPerJob, runRecords } from '../../support/fleet-counts.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

const TASKS = 24;
const plans = Array.from({ length: TASKS }, (_, i) => ({ name: `f${i}`, steps: 2 + (i % 3) }));
const expectedCalls = plans.reduce((sum, p) => sum + p.steps, 0);

let sentinel: LocalSentinel;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];
let reachedCut: () => void = () => undefined;
const cutReached = new Promise<void>((resolve) => (reachedCut = resolve));

setupOrFail(async () => {
  sentinel = await startLocalSentinel();
  ns = { ...createNamespace('sentinel-failover'), prefix: `test-failover-${randomBytes(4).toString('hex')}` };
  client = new FleetClient({
    redisSentinels: sentinel.sentinels,
    redisSentinelName: sentinel.name,
    prefix: ns.prefix,
  });
  redis = createRedis(redisTarget({ sentinels: sentinel.sentinels, sentinelName: sentinel.name }), 'worker');
  model = await startScriptedModel({
    latencyMs: 200,
    rules: [
      (request) => {
        if (model.requests.length >= Math.floor(expectedCalls / 3)) reachedCut();
        return stepsModel(request);
      },
    ],
  });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await client?.close();
  if (redis) {
    await deleteKeysWithPrefix(redis, ns.prefix).catch(() => undefined);
    redis.disconnect();
  }
  await ns?.cleanup();
  await model?.close();
  await sentinel?.close();
});

it('SENTINEL FAILOVER mid-batch: every task one result and one row, the batch summary complete', async () => {
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        REDIS_SENTINELS: sentinel.sentinels,
        REDIS_SENTINEL_NAME: sentinel.name,
        OPENAI_BASE_URL: model.baseURL,
        AGENT_PROTOCOL: 'json',
        AGENT_MAX_COST_USD: '1',
        WORKER_CONCURRENCY: '5',
        WORKER_LOCK_DURATION_MS: '5000',
        WORKER_STALLED_INTERVAL_MS: '2000',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
  const startedAt = Date.now();
  const tasks = plans.map((p) => ({ task: `job ${p.name}: ${p.steps} steps` }));
  const { batchId, jobIds } = await client.enqueueBatch({ tasks, name: 'sentinel failover' });

  await cutReached;
  const failoverAt = Date.now();
  const newMaster = await sentinel.failover();
  const failoverMs = Date.now() - failoverAt;

  const status = await client.waitForBatch(batchId, { timeoutMs: 180_000 });
  // Each worker checked that the new master has the results it published lately (a result the old master took
  // after the promotion is published again): what made this test lose one result in about one run of twenty.
  await Promise.all(
    workers.map((w) => w.waitForOutput(/Redis changed server|lost in a Redis failover/, 10_000)),
  );
  const results = await Promise.all(jobIds.map((id) => client.getResult(id)));
  const published = await resultsPerJob(redis, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  printFigures('sentinel-failover', {
    tasks: TASKS,
    failoverS: seconds(failoverMs),
    newMasterIsReplica: newMaster === sentinel.replicaPort,
    succeeded: status.summary.succeeded,
    modelCalls: model.requests.length,
    expectedCalls,
    maxAttempts: Math.max(0, ...[...records.values()].flat().map((r) => r.attempts)),
    durationS: seconds(Date.now() - startedAt),
  });

  expect(newMaster).toBe(sentinel.replicaPort);
  expect(status.state).toBe('completed');
  expect(status.summary).toMatchObject({ batchId, tasks: TASKS, succeeded: TASKS, failed: 0, stopped: 0 });
  expect(results.map((r) => r?.status)).toEqual(plans.map(() => 'succeeded'));
  plans.forEach((p, i) => expect(results[i]?.steps, p.name).toBe(p.steps));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  expect(model.failures).toEqual([]);
}, 300_000);
