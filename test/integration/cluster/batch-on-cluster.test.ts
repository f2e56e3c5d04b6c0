// A batch on a Redis Cluster: a real 3-master cluster of the test's own (test/support/redis-cluster.ts), two real
// worker processes and the client library on REDIS_CLUSTER_NODES with a braced QUEUE_PREFIX. Every task ends
// with one result and one agent_runs row, the batch summary is complete, and the batch's budget was booked and
// settled in the spend ledger, all on the cluster.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis, type RedisClient } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runBatchThroughWorkers } from '../../support/batch-through-workers.js';
import {
  createNamespace,
  killWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];

setupOrFail(async () => {
  cluster = await startLocalCluster();
  // The namespace's database, and a prefix of its own whose braces keep every key of the fleet in one slot.
  ns = { ...createNamespace('cluster'), prefix: `{test-cluster-${randomBytes(4).toString('hex')}}` };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  redis = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'producer');
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
  await cluster?.close();
});

it('a batch through two workers on a Redis Cluster: every task one result and one row, the ledger used', async () => {
  await runBatchThroughWorkers({
    ns,
    client,
    redis,
    model,
    redisEnv: { REDIS_CLUSTER_NODES: cluster.nodes },
    workers,
    name: 'on a cluster',
  });
  for (const worker of workers) expect(worker.output()).not.toMatch(/CROSSSLOT|MOVED|ClusterAllFailedError/);
}, 240_000);
