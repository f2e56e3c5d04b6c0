// Passwords and TLS for a Redis Cluster and for Sentinel (src/queue/redis-target.ts, src/queue/redis.ts): read from
// REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS, REDIS_TLS_CA_FILE, REDIS_SENTINEL_USERNAME / _PASSWORD and from
// FleetClient's options alike, not read with REDIS_URL, handed to ioredis under its own names, and never shown.
// The connections are made to a closed port and dropped at once: nothing is reached.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv, redisClientOptionsOf, redisTargetOf } from '../../../config/env.js';
import { isSecretKey, redactValue } from '../../../src/logging/redact.js';
import { createRedis } from '../../../src/queue/redis.js';
import { describeRedisTarget, OPTION_NAMES, redisTarget } from '../../../src/queue/redis-target.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
let dir: string;
let caFile: string;
let notPem: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'af-redis-access-'));
  caFile = join(dir, 'ca.pem');
  notPem = join(dir, 'ca.txt');
  await writeFile(caFile, PEM);
  await writeFile(notPem, 'not a certificate');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cluster = { REDIS_CLUSTER_NODES: 'a:7001', QUEUE_PREFIX: '{af}' };
const sentinel = { REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' };

describe('from the environment', () => {
  it('a cluster takes the user, the password and TLS with the CA file read at start', () => {
    const env = parseEnv({
      ...cluster,
      REDIS_USERNAME: 'fleet',
      REDIS_PASSWORD: 'pw',
      REDIS_TLS: 'on',
      REDIS_TLS_CA_FILE: caFile,
    });
    expect(redisTargetOf(env)).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'a', port: 7001 }],
      access: { username: 'fleet', password: 'pw', tls: { ca: PEM } },
    });
  });

  it('Sentinel takes the sentinels’ own user and password too; a cluster does not', () => {
    const secrets = { REDIS_PASSWORD: 'pw', REDIS_SENTINEL_USERNAME: 'su', REDIS_SENTINEL_PASSWORD: 'spw' };
    expect(redisTargetOf(parseEnv({ ...sentinel, ...secrets }))).toMatchObject({
      kind: 'sentinel',
      access: { password: 'pw', sentinelUsername: 'su', sentinelPassword: 'spw' },
    });
    expect(redisTargetOf(parseEnv({ ...cluster, ...secrets }))).toMatchObject({ access: { password: 'pw' } });
    expect(redisTargetOf(parseEnv({ ...cluster, ...secrets }))).not.toHaveProperty('access.sentinelPassword');
  });

  it('REDIS_TLS is off by default: no TLS, Node default CAs when on', () => {
    expect(redisTargetOf(parseEnv(cluster))).not.toHaveProperty('access');
    expect(redisTargetOf(parseEnv({ ...cluster, REDIS_TLS: 'on' }))).toMatchObject({ access: { tls: {} } });
  });

  it('with REDIS_URL the URL carries them: the others are not read, and not refused', () => {
    const env = parseEnv({ REDIS_PASSWORD: 'pw', REDIS_TLS: 'on', REDIS_URL: 'rediss://:u@h:6380' });
    expect(redisTargetOf(env)).toEqual({ kind: 'server', url: 'rediss://:u@h:6380' });
  });

  it.each([
    [{ ...cluster, REDIS_TLS: 'yes' }, /^REDIS_TLS="yes" is invalid/],
    [
      { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' },
      /^REDIS_TLS_CA_FILE=.*cannot be read/,
    ],
    [
      { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: 'NOT_PEM' },
      /^REDIS_TLS_CA_FILE=.*no PEM certificate/,
    ],
    [{ ...cluster, REDIS_TLS_CA_FILE: 'CA' }, /REDIS_TLS_CA_FILE is set but REDIS_TLS is not on/],
  ])('refuses %j naming the variable', (source, message) => {
    const resolved = Object.fromEntries(
      Object.entries(source).map(([k, v]) => [k, v === 'NOT_PEM' ? notPem : v === 'CA' ? caFile : v]),
    );
    expect(() => parseEnv(resolved)).toThrow(message);
  });

  it('are handed to FleetClient as its options', () => {
    const env = parseEnv({ ...sentinel, REDIS_USERNAME: 'u', REDIS_PASSWORD: 'pw', REDIS_TLS: 'on' });
    expect(redisClientOptionsOf({ ...env, REDIS_SENTINEL_PASSWORD: 'spw' })).toMatchObject({
      redisSentinels: 's:26379',
      redisUsername: 'u',
      redisPassword: 'pw',
      redisTls: true,
      redisSentinelPassword: 'spw',
    });
  });
});

describe('never shown', () => {
  it('describeRedisTarget says which were given, never a password', () => {
    const target = redisTarget({
      sentinels: 'a:1',
      sentinelName: 'm',
      username: 'fleet',
      password: 'hunter2',
      sentinelPassword: 'sentinel-pw',
      tls: true,
    });
    const shown = describeRedisTarget(target);
    expect(shown).toBe(
      'REDIS_SENTINELS=a:1 (REDIS_SENTINEL_NAME=m, REDIS_USERNAME=fleet, REDIS_PASSWORD set, ' +
        'REDIS_SENTINEL_PASSWORD set, REDIS_TLS=on)',
    );
    expect(shown).not.toMatch(/hunter2|sentinel-pw/);
  });

  it('a logged target or set of options hides the passwords (src/logging/redact.ts)', () => {
    const target = redisTarget({ clusterNodes: 'a:1', password: 'hunter2' });
    const options = redisClientOptionsOf(
      parseEnv({ ...sentinel, REDIS_PASSWORD: 'hunter2', REDIS_SENTINEL_PASSWORD: 'sentinel-pw' }),
    );
    expect(JSON.stringify(redactValue({ target, options }))).not.toMatch(/hunter2|sentinel-pw/);
    expect(isSecretKey('REDIS_PASSWORD') && isSecretKey('REDIS_SENTINEL_PASSWORD')).toBe(true);
  });

  it('a bad value of a password variable is not echoed', () => {
    // The value itself is never refused; the message of another variable never carries it.
    expect(() => parseEnv({ ...cluster, REDIS_PASSWORD: 'hunter2', REDIS_TLS: 'maybe' })).toThrow(
      /^REDIS_TLS="maybe"/,
    );
  });

  it('FleetClient options name the option at fault', () => {
    expect(() => redisTarget({ clusterNodes: 'a:1', tlsCa: PEM }, OPTION_NAMES)).toThrow(
      /redisTlsCa is set but redisTls is not on/,
    );
  });
});

describe('handed to ioredis', () => {
  const made = <T extends Redis | Cluster>(client: T): T => {
    client.on('error', () => undefined);
    client.disconnect();
    return client;
  };

  it('a cluster: every node gets the user, password and TLS; host names are kept for the certificate check', () => {
    const target = redisTarget({
      clusterNodes: '127.0.0.1:1',
      username: 'u',
      password: 'pw',
      tls: true,
      tlsCa: PEM,
    });
    const client = made(createRedis(target, 'worker') as Cluster);
    expect(client.options.redisOptions).toMatchObject({ username: 'u', password: 'pw', tls: { ca: PEM } });
    const lookup = client.options.dnsLookup!;
    lookup('clustercfg.example.cache.amazonaws.com', (error, address) => {
      expect(error).toBeNull();
      expect(address).toBe('clustercfg.example.cache.amazonaws.com');
    });
  });

  it('a cluster without TLS: no tls, ioredis’s own DNS lookup', () => {
    const client = made(
      createRedis(redisTarget({ clusterNodes: '127.0.0.1:1', password: 'pw' }), 'worker') as Cluster,
    );
    expect(client.options.redisOptions).not.toHaveProperty('tls');
    expect(client.options.redisOptions).toMatchObject({ password: 'pw' });
  });

  it('Sentinel: the servers’ and the sentinels’ credentials, TLS to both', () => {
    const target = redisTarget({
      sentinels: '127.0.0.1:1',
      sentinelName: 'm',
      password: 'pw',
      sentinelUsername: 'su',
      sentinelPassword: 'spw',
      tls: true,
    });
    const client = made(createRedis(target, 'producer') as Redis);
    expect(client.options).toMatchObject({
      password: 'pw',
      sentinelUsername: 'su',
      sentinelPassword: 'spw',
      tls: {},
      enableTLSForSentinelMode: true,
      sentinelTLS: {},
    });
  });
});
