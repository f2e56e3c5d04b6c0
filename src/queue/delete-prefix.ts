import type { RedisClient } from './redis.js';

/**
 * Deletes every key under a queue prefix (queues, checkpoints, ledger): what a test or a benchmark leaves behind,
 * or a fleet being retired. SCAN, so a large Redis is never blocked.
 */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
