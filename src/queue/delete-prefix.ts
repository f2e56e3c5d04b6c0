import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './redis.js';

/**
 * Deletes every key under a queue prefix (queues, checkpoints, ledger): what a test or a benchmark leaves behind,
 * or a fleet being retired. SCAN, so a large Redis is never blocked. On a cluster, SCAN sees one node's keys
 * only: every master is scanned, and its keys deleted on that master.
 */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  const servers: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  await Promise.all(servers.map((server) => deleteOnServer(server, prefix)));
}

async function deleteOnServer(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    // One DEL a key: keys of one master may still lie on different slots, which one DEL would refuse.
    if (keys.length) await redis.pipeline(keys.map((key) => ['del', key])).exec();
  } while (cursor !== '0');
}
