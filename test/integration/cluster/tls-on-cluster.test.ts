// A Redis Cluster over TLS with a password, as a managed cluster (MemoryDB, ElastiCache in cluster mode) is: three
// masters of the test's own listening with TLS only (their cluster bus too), certificates from a throwaway CA made
// with openssl (test/support/test-tls.ts). A small batch through a real worker process on REDIS_TLS=on with
// REDIS_TLS_CA_FILE, and the client library with `redisTls` and `redisTlsCa`.
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
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';
import { makeTestTls, type TestTls } from '../../support/test-tls.js';

const PASSWORD = `tls-${randomBytes(8).toString('hex')}`;

let tls: TestTls;
let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];

setupOrFail(async () => {
  tls = await makeTestTls();
  cluster = await startLocalCluster(3, 0, { password: PASSWORD, tls });
  ns = { ...createNamespace('cluster-tls'), prefix: `{test-cluster-tls-${randomBytes(4).toString('hex')}}` };
  const access = { redisPassword: PASSWORD, redisTls: true, redisTlsCa: tls.ca };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, ...access, prefix: ns.prefix });
  redis = createRedis(
    redisTarget({ clusterNodes: cluster.nodes, password: PASSWORD, tls: true, tlsCa: tls.ca }),
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
  await cluster?.close();
  await tls?.close();
});

it('a batch through a worker on a TLS cluster (REDIS_TLS=on, REDIS_TLS_CA_FILE, REDIS_PASSWORD)', async () => {
  await runBatchThroughWorkers({
    ns,
    client,
    redis,
    model,
    redisEnv: {
      REDIS_CLUSTER_NODES: cluster.nodes,
      REDIS_PASSWORD: PASSWORD,
      REDIS_TLS: 'on',
      REDIS_TLS_CA_FILE: tls.caFile,
    },
    workers,
    workerCount: 1,
    tasks: 4,
    name: 'on a TLS cluster',
  });
  expect(workers[0]!.output()).not.toContain(PASSWORD);
}, 240_000);

it('without TLS the nodes do not answer, and TLS without the CA is refused: the settings are what carried it', async () => {
  const base = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: PASSWORD };
  const cases: [Record<string, string>, RegExp][] = [
    [base, /no answer within/],
    // Node's default CAs do not know the test's own.
    [{ ...base, REDIS_TLS: 'on' }, /last connection error: .*certificate/],
  ];
  for (const [redisEnv, said] of cases) {
    const worker = startWorker(ns, redisEnv);
    workers.push(worker);
    const { code } = await worker.exited;
    expect(code).not.toBe(0);
    expect(worker.output()).toContain(`Cannot reach Redis at REDIS_CLUSTER_NODES=${cluster.nodes}`);
    expect(worker.output()).toMatch(said);
    expect(worker.output()).not.toContain(PASSWORD);
  }
}, 60_000);
