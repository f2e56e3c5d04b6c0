// Fault suite, Redis Cluster failover: a batch through 2 workers on a cluster of the test's own (3 masters, each
// with a replica) under a braced prefix; a third of the way in, CLUSTER FAILOVER on the replica of the master
// that holds the fleet's slot makes it the master. The workers and the client follow the slot to it: every task
// ends with one result and one agent_runs row, and the batch summary is complete.
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
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

const TASKS = 24;
const plans = Array.from({ length: TASKS }, (_, i) => ({ name: `f${i}`, steps: 2 + (i % 3) }));
const expectedCalls = plans.reduce((sum, p) => sum + p.steps, 0);

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];
let reachedCut: () => void = () => undefined;
const cutReached = new Promise<void>((resolve) => (reachedCut = resolve));

setupOrFail(async () => {
  cluster = await startLocalCluster(3, 1);
  ns = {
    ...createNamespace('cluster-failover'),
    prefix: `{test-failover-${randomBytes(4).toString('hex')}}`,
  };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  redis = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'worker');
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
  await cluster?.close();
});

it("CLUSTER FAILOVER of the fleet's master mid-batch: every task one result and one row, the batch summary complete", async () => {
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        REDIS_CLUSTER_NODES: cluster.nodes,
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
  const { batchId, jobIds } = await client.enqueueBatch({ tasks, name: 'cluster failover' });

  await cutReached;
  const failoverAt = Date.now();
  const { from, to } = await cluster.failoverSlotOf(ns.prefix);
  const failoverMs = Date.now() - failoverAt;

  const status = await client.waitForBatch(batchId, { timeoutMs: 180_000 });
  const results = await Promise.all(jobIds.map((id) => client.getResult(id)));
  const published = await resultsPerJob(redis, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  printFigures('cluster-failover', {
    tasks: TASKS,
    failoverS: seconds(failoverMs),
    from,
    to,
    succeeded: status.summary.succeeded,
    modelCalls: model.requests.length,
    expectedCalls,
    maxAttempts: Math.max(0, ...[...records.values()].flat().map((r) => r.attempts)),
    durationS: seconds(Date.now() - startedAt),
  });

  expect(to).not.toBe(from);
  expect(status.state).toBe('completed');
  expect(status.summary).toMatchObject({ batchId, tasks: TASKS, succeeded: TASKS, failed: 0, stopped: 0 });
  expect(results.map((r) => r?.status)).toEqual(plans.map(() => 'succeeded'));
  plans.forEach((p, i) => expect(results[i]?.steps, p.name).toBe(p.steps));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  expect(model.failures).toEqual([]);
}, 300_000);
