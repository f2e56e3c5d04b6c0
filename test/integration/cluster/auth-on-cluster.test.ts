// A password-protected Redis Cluster (`requirepass` on every node, as a managed cluster asks): a batch through a
// real worker process on REDIS_CLUSTER_NODES + REDIS_PASSWORD and the client library with `redisPassword`; a wrong
// password (or none) is refused at start with an error that names REDIS_CLUSTER_NODES and says authentication
// failed, and no password (right or wrong) appears in anything the worker prints or the client throws.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
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

const PASSWORD = `right-${randomBytes(8).toString('hex')}`;
const WRONG = `wrong-${randomBytes(8).toString('hex')}`;

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];

setupOrFail(async () => {
  cluster = await startLocalCluster(3, 0, { password: PASSWORD });
  ns = {
    ...createNamespace('cluster-auth'),
    prefix: `{test-cluster-auth-${randomBytes(4).toString('hex')}}`,
  };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, redisPassword: PASSWORD, prefix: ns.prefix });
  redis = createRedis(redisTarget({ clusterNodes: cluster.nodes, password: PASSWORD }), 'producer');
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

it('a batch through a worker on a password-protected cluster (REDIS_PASSWORD, redisPassword)', async () => {
  await runBatchThroughWorkers({
    ns,
    client,
    redis,
    model,
    redisEnv: { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: PASSWORD },
    workers,
    workerCount: 1,
    tasks: 6,
    name: 'on a password-protected cluster',
  });
  for (const worker of workers) expect(worker.output()).not.toContain(PASSWORD);
}, 240_000);

describe('a password the cluster refuses', () => {
  it('a worker stops at start naming REDIS_CLUSTER_NODES and the failed authentication, no password shown', async () => {
    const worker = startWorker(ns, { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PASSWORD: WRONG });
    workers.push(worker);
    const { code } = await worker.exited;
    const output = worker.output();
    expect(code).not.toBe(0);
    expect(output).toContain(`Cannot reach Redis at REDIS_CLUSTER_NODES=${cluster.nodes}`);
    expect(output).toMatch(/authentication failed \(REDIS_USERNAME \/ REDIS_PASSWORD\): WRONGPASS/);
    expect(output).not.toContain(WRONG);
    expect(output).not.toContain(PASSWORD);
    expect(output).not.toMatch(/worker started/);
  }, 60_000);

  it('the client rejects naming REDIS_CLUSTER_NODES, whether the password is wrong or missing', async () => {
    for (const redisPassword of [WRONG, undefined]) {
      const wrong = new FleetClient({ redisClusterNodes: cluster.nodes, redisPassword, prefix: ns.prefix });
      try {
        const error = await wrong.getTask('x').then(
          () => null,
          (caught: unknown) => caught as Error,
        );
        expect(error?.message).toContain(`Cannot reach Redis at REDIS_CLUSTER_NODES=${cluster.nodes}`);
        expect(error?.message).toMatch(/authentication failed .*(WRONGPASS|NOAUTH)/);
        expect(`${error?.message} ${error?.stack}`).not.toContain(WRONG);
      } finally {
        await wrong.close().catch(() => undefined);
      }
    }
  }, 60_000);
});
