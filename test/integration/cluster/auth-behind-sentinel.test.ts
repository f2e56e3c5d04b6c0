// Redis behind Sentinel with passwords: the master and replica ask for one (`requirepass`), and so do the sentinels
// themselves. A batch through a real worker process on REDIS_SENTINELS + REDIS_PASSWORD + REDIS_SENTINEL_PASSWORD and
// the client library with `redisPassword` and `redisSentinelPassword`; either password wrong is refused at start
// with an error that names REDIS_SENTINELS and which authentication failed, and no password is ever shown.
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
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

const PASSWORD = `data-${randomBytes(8).toString('hex')}`;
const SENTINEL_PASSWORD = `sentinel-${randomBytes(8).toString('hex')}`;
const WRONG = `wrong-${randomBytes(8).toString('hex')}`;
const SECRETS = [PASSWORD, SENTINEL_PASSWORD, WRONG];

let sentinel: LocalSentinel;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let redis: RedisClient;
const workers: WorkerHandle[] = [];

const env = (password: string, sentinelPassword: string) => ({
  REDIS_SENTINELS: sentinel.sentinels,
  REDIS_SENTINEL_NAME: sentinel.name,
  REDIS_PASSWORD: password,
  REDIS_SENTINEL_PASSWORD: sentinelPassword,
});

setupOrFail(async () => {
  sentinel = await startLocalSentinel({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  ns = {
    ...createNamespace('sentinel-auth'),
    prefix: `test-sentinel-auth-${randomBytes(4).toString('hex')}`,
  };
  const target = { redisSentinels: sentinel.sentinels, redisSentinelName: sentinel.name };
  client = new FleetClient({
    ...target,
    redisPassword: PASSWORD,
    redisSentinelPassword: SENTINEL_PASSWORD,
    prefix: ns.prefix,
  });
  redis = createRedis(
    redisTarget({
      sentinels: sentinel.sentinels,
      sentinelName: sentinel.name,
      password: PASSWORD,
      sentinelPassword: SENTINEL_PASSWORD,
    }),
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

it('a batch through a worker behind password-protected Sentinel (REDIS_PASSWORD, REDIS_SENTINEL_PASSWORD)', async () => {
  await runBatchThroughWorkers({
    ns,
    client,
    redis,
    model,
    redisEnv: env(PASSWORD, SENTINEL_PASSWORD),
    workers,
    workerCount: 1,
    tasks: 6,
    name: 'behind password-protected Sentinel',
  });
  for (const secret of SECRETS) expect(workers[0]!.output()).not.toContain(secret);
}, 240_000);

describe('a password refused', () => {
  it.each([
    [
      'the servers',
      () => env(WRONG, SENTINEL_PASSWORD),
      /authentication failed \(REDIS_USERNAME \/ REDIS_PASSWORD\)/,
    ],
    [
      'the sentinels',
      () => env(PASSWORD, WRONG),
      /authentication failed at the sentinels \(REDIS_SENTINEL_USERNAME \/ REDIS_SENTINEL_PASSWORD\)/,
    ],
  ])(
    'by %s: the worker stops at start naming REDIS_SENTINELS, no password shown',
    async (_, redisEnv, said) => {
      const worker = startWorker(ns, redisEnv());
      workers.push(worker);
      const { code } = await worker.exited;
      const output = worker.output();
      expect(code).not.toBe(0);
      expect(output).toContain(`Cannot reach Redis at REDIS_SENTINELS=${sentinel.sentinels}`);
      expect(output).toMatch(said);
      for (const secret of SECRETS) expect(output).not.toContain(secret);
    },
    60_000,
  );

  it('the client rejects naming REDIS_SENTINELS and the failed authentication', async () => {
    const wrong = new FleetClient({
      redisSentinels: sentinel.sentinels,
      redisSentinelName: sentinel.name,
      redisPassword: WRONG,
      redisSentinelPassword: SENTINEL_PASSWORD,
      prefix: ns.prefix,
    });
    try {
      const error = await wrong.getTask('x').then(
        () => null,
        (caught: unknown) => caught as Error,
      );
      expect(error?.message).toContain(`Cannot reach Redis at REDIS_SENTINELS=${sentinel.sentinels}`);
      expect(error?.message).toMatch(/authentication failed .*WRONGPASS/);
      for (const secret of SECRETS) expect(`${error?.message} ${error?.stack}`).not.toContain(secret);
    } finally {
      await wrong.close().catch(() => undefined);
    }
  }, 60_000);
});
