// A Redis that cannot be reached is named by the setting that was used: REDIS_CLUSTER_NODES or REDIS_SENTINELS
// (a worker's or the client's error), never a REDIS_URL nobody set. Ports nothing listens on: no service needed.
import { expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { freePort } from '../../../src/demo/free-port.js';
import { assertRedisReachable, createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';

it('a cluster nobody answers for: the client names REDIS_CLUSTER_NODES and its nodes', async () => {
  const port = await freePort(0);
  const client = new FleetClient({ redisClusterNodes: `127.0.0.1:${port}`, prefix: '{af}' });
  try {
    await expect(client.getTask('x')).rejects.toThrow(
      `Cannot reach Redis at REDIS_CLUSTER_NODES=127.0.0.1:${port}`,
    );
  } finally {
    await client.close().catch(() => undefined);
  }
}, 30_000);

it('sentinels nobody answers for: the check names REDIS_SENTINELS and the master name', async () => {
  const port = await freePort(0);
  const target = redisTarget({ sentinels: `127.0.0.1:${port}`, sentinelName: 'm' });
  const redis = createRedis(target, 'producer');
  redis.on('error', () => undefined);
  try {
    await expect(assertRedisReachable(redis, target, 1_000)).rejects.toThrow(
      `Cannot reach Redis at REDIS_SENTINELS=127.0.0.1:${port} (REDIS_SENTINEL_NAME=m)`,
    );
  } finally {
    redis.disconnect();
  }
}, 30_000);
