// A batch on Redis behind Sentinel: a master, a replica and three sentinels of the test's own
// (test/support/redis-sentinel.ts), two real worker processes and the client library on REDIS_SENTINELS and
// REDIS_SENTINEL_NAME. Every task ends with one result and one agent_runs row, the batch summary is complete, and
// the batch's budget was booked and settled in the spend ledger, on the master the sentinels name.
import { randomBytes } from 'node:crypto';
import { afterAll, it } from 'vitest';
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
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { connect, waitFor } from '../../support/redis-processes.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

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
  await runBatchThroughWorkers({
    ns,
    client,
    redis,
    model,
    redisEnv: { REDIS_SENTINELS: sentinel.sentinels, REDIS_SENTINEL_NAME: sentinel.name },
    workers,
    name: 'behind Sentinel',
  });
  // Written on the master, and replicated.
  const replica = connect(sentinel.replicaPort);
  try {
    await waitFor(async () => (await replica.keys(`${ns.prefix}:*`)).length > 0, 'the keys replicated');
  } finally {
    replica.disconnect();
  }
}, 240_000);
