// One place that makes Redis connections. Workers block on Redis and must never give up on a command
// (BullMQ requires maxRetriesPerRequest: null); producers must fail fast with a clear error instead of
// hanging when Redis is down. The target is one server, a Redis Cluster or a server behind Sentinel
// (src/queue/redis-target.ts); every caller takes the result as a RedisClient and never asks which.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ConfigError } from '../kernel/errors.js';
import { scrubText } from '../logging/redact.js';
import { withTimeout } from '../util/with-timeout.js';
import { coalesceWrites } from './coalesce-writes.js';
import { describeRedisTarget, type RedisAccess, type RedisTarget } from './redis-target.js';

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

function credentials(access: RedisAccess): Pick<RedisOptions, 'username' | 'password'> {
  return {
    ...(access.username ? { username: access.username } : {}),
    ...(access.password ? { password: access.password } : {}),
  };
}

/** Node's TLS options: its default CAs, or the given PEM certificates instead. */
function tlsOptions(access: RedisAccess): { ca?: string } | undefined {
  if (!access.tls) return undefined;
  return access.tls.ca === undefined ? {} : { ca: access.tls.ca };
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
    case 'sentinel': {
      const access = target.access ?? {};
      const tls = tlsOptions(access);
      redis = new Redis({
        ...options,
        ...credentials(access),
        sentinels: target.sentinels,
        name: target.name,
        // A failover while connected: the old master, demoted, keeps answering (reads of a replica that resyncs
        // and sees no batch, writes refused READONLY). The detector listens to the sentinels' +switch-master and
        // reconnects to the new master at once; a READONLY reply reconnects too and the command goes again.
        failoverDetector: true,
        reconnectOnError: (error: Error) => (error.message.startsWith('READONLY') ? 2 : false),
        ...(access.sentinelUsername ? { sentinelUsername: access.sentinelUsername } : {}),
        ...(access.sentinelPassword ? { sentinelPassword: access.sentinelPassword } : {}),
        // TLS to the master and replicas the sentinels name (ioredis applies `tls` there only with
        // enableTLSForSentinelMode) and to the sentinels themselves (sentinelTLS): one setting for the whole set.
        ...(tls ? { tls, enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
      });
      break;
    }
    case 'cluster': {
      const access = target.access ?? {};
      const tls = tlsOptions(access);
      // Each node's connection takes the role's options (BullMQ reads maxRetriesPerRequest from redisOptions);
      // the cluster itself keeps trying to reach its nodes, as one server's connection keeps reconnecting.
      redis = new Cluster(target.nodes, {
        redisOptions: { ...options, ...credentials(access), ...(tls ? { tls } : {}) },
        clusterRetryStrategy: (times) => Math.min(times * 200, 2_000),
        // By default ioredis resolves each node's host name to an address before connecting, so TLS would
        // check the certificate against an IP address: a managed cluster's certificate (ElastiCache,
        // MemoryDB) names the host, and every connection would fail. With TLS the name is kept as given.
        ...(tls
          ? {
              dnsLookup: (address: string, done: (error: null, address: string) => void) =>
                done(null, address),
            }
          : {}),
      });
      break;
    }
  }
  if (role === 'worker') coalesceWrites(redis);
  return redis;
}

/**
 * Waits until the connection answers PING, or throws an error that names the setting used (REDIS_URL, …). A
 * password the servers (or the sentinels) refuse is said so, from the connection errors seen meanwhile: a cluster
 * reports it only as "Failed to refresh slots cache", with the node's refusal inside. No password is ever shown.
 */
export async function assertRedisReachable(
  redis: RedisClient,
  where: RedisTarget | string,
  timeoutMs = 5_000,
): Promise<void> {
  const target: RedisTarget = typeof where === 'string' ? { kind: 'server', url: where } : where;
  const seen: unknown[] = [];
  const nodeErrors: unknown[] = [];
  const note = (error: unknown) => void seen.push(error);
  // A cluster's node errors come as 'node error': the TLS failure itself, where 'error' says the link closed.
  const noteNode = (error: unknown) => void nodeErrors.push(error);
  redis.on('error', note);
  redis.on('node error', noteNode);
  try {
    await withTimeout(redis.ping(), timeoutMs);
  } catch (error) {
    const reason =
      authProblem([error, ...seen, ...nodeErrors]) ?? withLastError(error, telling([...seen, ...nodeErrors]));
    throw new ConfigError(
      'redis_unreachable',
      `Cannot reach Redis at ${describeRedisTarget(target)}: ${reason}`,
      {
        retryable: true,
        cause: error,
      },
    );
  } finally {
    redis.off('error', note);
    redis.off('node error', noteNode);
  }
}

/** Errors that only say the connection went, which a cluster reports after (and instead of) the cause. */
const UNTELLING = /^(Connection is closed\.|Failed to refresh slots cache\.|Cluster is disconnect)/;

/** The last error that says why: a node's, or the cluster's last node error, not "Connection is closed.". */
function telling(errors: unknown[]): unknown {
  const messages = errors.flatMap((error) => {
    const inner = (error as { lastNodeError?: unknown } | null)?.lastNodeError;
    return [error, inner].filter((item): item is Error => item instanceof Error);
  });
  return messages.filter((error) => !UNTELLING.test(error.message)).at(-1) ?? messages.at(-1);
}

/**
 * The check's own failure (often only "no answer within 5000 ms"), with the last connection error seen if that
 * says more: a certificate not trusted, a refused connection (a cluster's, from inside "Failed to refresh slots
 * cache"). Scrubbed of credentials all the same.
 */
function withLastError(error: unknown, last: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!(last instanceof Error) || last === error || message.includes(last.message)) return message;
  return `${message} (last connection error: ${scrubText(last.message)})`;
}

const AUTH_REFUSED = /\b(WRONGPASS|NOAUTH)\b|invalid password|invalid username-password/i;
const SENTINELS_FAILED = /All sentinels are unreachable/;

/** "authentication failed …" when one of the errors (or a cluster's last node error inside it) is a refusal. */
function authProblem(errors: unknown[]): string | null {
  for (const error of errors) {
    const inner = (error as { lastNodeError?: unknown } | null)?.lastNodeError;
    for (const candidate of [error, inner]) {
      const message = candidate instanceof Error ? candidate.message : '';
      const refusal = AUTH_REFUSED.exec(message);
      if (!refusal) continue;
      // The server's own words (WRONGPASS …, NOAUTH …) carry no password.
      const words = message.slice(refusal.index).split('\n')[0]!.trim();
      if (SENTINELS_FAILED.test(message)) {
        return `authentication failed at the sentinels (REDIS_SENTINEL_USERNAME / REDIS_SENTINEL_PASSWORD): ${words}`;
      }
      return `authentication failed (REDIS_USERNAME / REDIS_PASSWORD): ${words}`;
    }
  }
  return null;
}
