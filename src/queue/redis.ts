// One place that makes Redis connections. Workers block on Redis and must never give up on a command
// (BullMQ requires maxRetriesPerRequest: null); producers must fail fast with a clear error instead of
// hanging when Redis is down. The target is one server, a Redis Cluster or a server behind Sentinel
// (src/queue/redis-target.ts); every caller takes the result as a RedisClient and never asks which.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ConfigError } from '../kernel/errors.js';
import { withTimeout } from '../util/with-timeout.js';
import { coalesceWrites } from './coalesce-writes.js';
import { describeRedisTarget, type RedisTarget } from './redis-target.js';

export type RedisRole = 'worker' | 'producer';

/** A connection to the fleet's Redis: one server's (also behind Sentinel) or a cluster's. */
export type RedisClient = Redis | Cluster;

function roleOptions(role: RedisRole): RedisOptions {
  const common = { lazyConnect: false, connectionName: `agent-fleet-${role}` };
  if (role === 'worker') return { ...common, maxRetriesPerRequest: null };
  return {
    ...common,
    // A command fails after one reconnection attempt instead of waiting for Redis to come back; the
    // connection itself keeps reconnecting, so a long-lived producer (the API) recovers from an outage.
    maxRetriesPerRequest: 1,
    connectTimeout: 3_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  };
}

/** A URL is one server's connection, typed as such (tests and tools that name one server keep `Redis`). */
export function createRedis(url: string, role: RedisRole): Redis;
export function createRedis(target: RedisTarget, role: RedisRole): RedisClient;
export function createRedis(where: RedisTarget | string, role: RedisRole): RedisClient {
  const target: RedisTarget = typeof where === 'string' ? { kind: 'server', url: where } : where;
  const options = roleOptions(role);
  let redis: RedisClient;
  switch (target.kind) {
    case 'server':
      redis = new Redis(target.url, options);
      break;
    case 'sentinel':
      redis = new Redis({ ...options, sentinels: target.sentinels, name: target.name });
      break;
    case 'cluster':
      // Each node's connection takes the role's options (BullMQ reads maxRetriesPerRequest from redisOptions);
      // the cluster itself keeps trying to reach its nodes, as one server's connection keeps reconnecting.
      redis = new Cluster(target.nodes, {
        redisOptions: options,
        clusterRetryStrategy: (times) => Math.min(times * 200, 2_000),
      });
      break;
  }
  if (role === 'worker') coalesceWrites(redis);
  return redis;
}

/** Waits until the connection answers PING, or throws an error that names the setting used (REDIS_URL, …). */
export async function assertRedisReachable(
  redis: RedisClient,
  where: RedisTarget | string,
  timeoutMs = 5_000,
): Promise<void> {
  const target: RedisTarget = typeof where === 'string' ? { kind: 'server', url: where } : where;
  try {
    await withTimeout(redis.ping(), timeoutMs);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(
      'redis_unreachable',
      `Cannot reach Redis at ${describeRedisTarget(target)}: ${reason}`,
      {
        retryable: true,
        cause: error,
      },
    );
  }
}
