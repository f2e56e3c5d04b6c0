// The Redis target (src/queue/redis-target.ts): one server, a cluster or Sentinel, read the same way from the
// environment and from FleetClient's options; each refusal names the setting at fault. Pure: no services.
import { describe, expect, it } from 'vitest';
import { parseEnv, redisTargetOf } from '../../../config/env.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import {
  assertPrefixFits,
  describeRedisTarget,
  hashTag,
  OPTION_NAMES,
  redisTarget,
} from '../../../src/queue/redis-target.js';

describe('the Redis target from the environment', () => {
  it('is REDIS_URL (its default) when neither a cluster nor Sentinel is named', () => {
    expect(redisTargetOf(parseEnv({}))).toEqual({ kind: 'server', url: 'redis://127.0.0.1:6379' });
  });

  it('is a cluster from REDIS_CLUSTER_NODES, IPv6 in brackets', () => {
    const env = parseEnv({ REDIS_CLUSTER_NODES: 'a:7001, 10.0.0.2:7002,[::1]:7003', QUEUE_PREFIX: '{af}' });
    expect(redisTargetOf(env)).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'a', port: 7001 },
        { host: '10.0.0.2', port: 7002 },
        { host: '::1', port: 7003 },
      ],
    });
  });

  it('is Sentinel from REDIS_SENTINELS and REDIS_SENTINEL_NAME', () => {
    const env = parseEnv({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'mymaster' });
    expect(redisTargetOf(env)).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
    });
  });

  it.each([
    [
      { REDIS_CLUSTER_NODES: 'a:7001,b', QUEUE_PREFIX: '{af}' },
      /^REDIS_CLUSTER_NODES="a:7001,b" is invalid: .*bad: "b"/,
    ],
    [{ REDIS_CLUSTER_NODES: 'a:70000', QUEUE_PREFIX: '{af}' }, /REDIS_CLUSTER_NODES.*bad: "a:70000"/],
    [{ REDIS_SENTINELS: 'redis://s1:26379', REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINELS.*host:port/],
    [{ REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINELS: 'b:2', QUEUE_PREFIX: '{af}' }, /both set/],
    [{ REDIS_SENTINELS: 'b:2' }, /REDIS_SENTINELS needs REDIS_SENTINEL_NAME/],
    [{ REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINEL_NAME is set without REDIS_SENTINELS/],
  ])('refuses %j', (source, message) => {
    expect(() => parseEnv(source)).toThrow(message);
  });
});

describe('QUEUE_PREFIX and a cluster', () => {
  it.each(['{agentfleet}', '{af}:x', 'fleet:{af}', 'agentfleet'])('accepts %s', (prefix) => {
    expect(parseEnv({ QUEUE_PREFIX: prefix }).QUEUE_PREFIX).toBe(prefix);
  });

  it.each(['{a}{b}', '{}', 'a{b', 'a}b', '{a b}'])('refuses %s', (prefix) => {
    expect(() => parseEnv({ QUEUE_PREFIX: prefix })).toThrow(/QUEUE_PREFIX=.*at most one \{hash tag\}/);
  });

  it('refuses a prefix without a hash tag on a cluster, naming QUEUE_PREFIX and why', () => {
    expect(() => parseEnv({ REDIS_CLUSTER_NODES: 'a:7001' })).toThrow(
      /QUEUE_PREFIX="agentfleet" has no hash tag: on a Redis Cluster every key of one fleet must hash to one slot.*\{agentfleet\}/,
    );
  });

  it('takes the hash tag as Redis Cluster does', () => {
    expect(hashTag('{af}:tasks:1')).toBe('af');
    expect(hashTag('x{af}y')).toBe('af');
    expect(hashTag('{}af')).toBeNull();
    expect(hashTag('agentfleet:tasks')).toBeNull();
  });

  it('lets any prefix through on one server or Sentinel', () => {
    expect(() => assertPrefixFits({ kind: 'server', url: 'redis://x:1' }, 'plain')).not.toThrow();
    expect(() => assertPrefixFits({ kind: 'sentinel', sentinels: [], name: 'm' }, 'plain')).not.toThrow();
  });
});

describe('FleetClient options', () => {
  it('name the option at fault', () => {
    expect(() => redisTarget({ clusterNodes: 'nope' }, OPTION_NAMES)).toThrow(/^redisClusterNodes must list/);
    expect(() => redisTarget({ sentinels: 'a:1' }, OPTION_NAMES)).toThrow(
      /redisSentinels needs redisSentinelName/,
    );
    expect(() => new FleetClient({ redisClusterNodes: '127.0.0.1:1', prefix: 'plain' })).toThrow(
      /prefix="plain" has no hash tag/,
    );
  });
});

describe('describeRedisTarget', () => {
  it('names the setting used, a password hidden', () => {
    expect(describeRedisTarget({ kind: 'server', url: 'redis://:secret@h:6379' })).toBe(
      'REDIS_URL=redis://:***@h:6379',
    );
    expect(describeRedisTarget(redisTarget({ clusterNodes: 'a:1,b:2' }))).toBe('REDIS_CLUSTER_NODES=a:1,b:2');
    expect(describeRedisTarget(redisTarget({ sentinels: 'a:1', sentinelName: 'm' }))).toBe(
      'REDIS_SENTINELS=a:1 (REDIS_SENTINEL_NAME=m)',
    );
  });
});
