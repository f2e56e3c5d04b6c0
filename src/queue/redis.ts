// One place that makes Redis connections. Workers block on Redis and must never give up on a command
// (BullMQ requires maxRetriesPerRequest: null); producers must fail fast with a clear error instead of
// hanging when Redis is down.
import { Redis } from 'ioredis';
import { ConfigError } from '../kernel/errors.js';
import { redactUrl } from '../../config/env.js';
import { withTimeout } from '../util/with-timeout.js';
import { coalesceWrites } from './coalesce-writes.js';

export type RedisRole = 'worker' | 'producer';

export function createRedis(url: string, role: RedisRole): Redis {
  const common = { lazyConnect: false, connectionName: `agent-fleet-${role}` };
  if (role === 'worker') {
    const redis = new Redis(url, { ...common, maxRetriesPerRequest: null });
    coalesceWrites(redis);
    return redis;
  }
  return new Redis(url, {
    ...common,
    // A command fails after one reconnection attempt instead of waiting for Redis to come back; the
    // connection itself keeps reconnecting, so a long-lived producer (the API) recovers from an outage.
    maxRetriesPerRequest: 1,
    connectTimeout: 3_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

/** Waits until the connection answers PING, or throws an error that names REDIS_URL. */
export async function assertRedisReachable(redis: Redis, url: string, timeoutMs = 5_000): Promise<void> {
  try {
    await withTimeout(redis.ping(), timeoutMs);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(
      'redis_unreachable',
      `Cannot reach Redis at REDIS_URL=${redactUrl(url)}: ${reason}`,
      {
        retryable: true,
        cause: error,
      },
    );
  }
}
