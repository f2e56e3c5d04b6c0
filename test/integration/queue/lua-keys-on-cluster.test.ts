// Every Lua script of the project runs on a Redis Cluster: a script may touch only the keys it is given in KEYS
// (a cluster routes a script by them, and refuses or misroutes a key built inside from ARGV or a prefix), and with
// a braced QUEUE_PREFIX all the keys one call is given hash to one slot, as the cluster itself says (CLUSTER
// KEYSLOT). The scripts are read from their files (the key each redis.call names) and then run through the
// modules that own them on a real 3-master cluster, every call's keys recorded.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepTrace } from '../../../src/kernel/types.js';
import { createLogger } from '../../../src/logging/logger.js';
import { RateLimiter } from '../../../src/fleet/rate-limiter.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { TenantSlots } from '../../../src/fleet/tenant-slots.js';
import { TokenRateLimiter } from '../../../src/fleet/token-rate-limiter.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { forgetJobState } from '../../../src/worker/job-state.js';
import { StepWrites } from '../../../src/worker/step-writes.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';

const PREFIX = '{lua-keys}:t';

function luaFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return luaFiles(path);
    return entry.endsWith('.lua') ? [path] : [];
  });
}

/** Commands a script runs that name no key. */
const KEYLESS = new Set(['TIME']);

/** Each `redis.call('CMD', <key>, …)` of a script: the command and the expression of its key argument. */
function keyArguments(source: string): { command: string; key: string }[] {
  const calls = [...source.matchAll(/redis\.p?call\(\s*'([A-Za-z]+)'\s*(?:,\s*([^,)]+))?/g)];
  return calls
    .filter((match) => !KEYLESS.has(match[1]!.toUpperCase()))
    .map((match) => ({ command: match[1]!, key: (match[2] ?? '').trim() }));
}

describe('the scripts, as written', () => {
  const files = luaFiles(join(REPO_ROOT, 'src'));

  it('are all found (the scan works)', () => {
    expect(files.length).toBeGreaterThanOrEqual(14);
  });

  it.each(files.map((file) => [file.slice(REPO_ROOT.length + 1), file]))(
    '%s names every key from KEYS (or the slice of KEYS it was handed), never builds one',
    (_name, file) => {
      for (const { command, key } of keyArguments(readFileSync(file, 'utf8'))) {
        // A key is KEYS[i], K[i] (spend-common's slice of KEYS), or a local that holds one; never text built
        // with `..`, a literal, or anything read from ARGV.
        expect(key, `${command} in ${file}`).not.toMatch(/\.\.|ARGV|['"]/);
        expect(key, `${command} in ${file}`).toMatch(/^(KEYS|K)\[[^\]]+\]$|^[a-z][A-Za-z0-9_]*$/);
      }
    },
  );
});

describe('the scripts, run on a cluster', () => {
  let cluster: LocalCluster;
  let redis: Cluster;
  /** The keys of every script call the modules made: EVALSHA and EVAL alike. */
  const calls: { sha: string; keys: string[] }[] = [];

  beforeAll(async () => {
    cluster = await startLocalCluster();
    redis = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'producer') as Cluster;
    const record = (sha: string, numKeys: number | string, rest: unknown[]) =>
      calls.push({ sha, keys: rest.slice(0, Number(numKeys)).map(String) });
    // Recorded on the way through, then sent to the cluster unchanged.
    const evalsha = redis.evalsha.bind(redis) as (...args: unknown[]) => Promise<unknown>;
    const evalScript = redis.eval.bind(redis) as (...args: unknown[]) => Promise<unknown>;
    Object.assign(redis, {
      evalsha: (sha: string, numKeys: number, ...rest: unknown[]) => {
        record(sha, numKeys, rest);
        return evalsha(sha, numKeys, ...rest);
      },
      eval: (source: string, numKeys: number, ...rest: unknown[]) => {
        record(source.slice(0, 40), numKeys, rest);
        return evalScript(source, numKeys, ...rest);
      },
    });
  }, 60_000);

  afterAll(async () => {
    redis?.disconnect();
    await cluster?.close();
  });

  it('every key of each call hashes to the slot of the prefix, and the cluster runs them all', async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX, dailyCaps: { maxCostUsd: 10 } });
    await ledger.setCaps('batch:b1', { maxCostUsd: 1 });
    const booked = await ledger.reserve(['day:2026-12-07', 'batch:b1'], { tokens: 100, costUsd: 0.01 });
    if (!booked.ok) throw new Error(booked.message);
    await ledger.settle(booked.ticket, { tokens: 50, costUsd: 0.005 });
    expect((await ledger.getSpend('batch:b1')).usedUsd).toBeCloseTo(0.005);

    const rate = new RateLimiter({ redis, prefix: PREFIX, limit: 5 });
    expect((await rate.tryAcquire()).ok).toBe(true);
    await rate.pause(10);
    const tokens = new TokenRateLimiter({ redis, prefix: PREFIX, model: 'm', limit: 1000 });
    const grant = await tokens.tryGrant(10);
    expect(grant.ok).toBe(true);
    if (grant.ok) await tokens.settle(grant.grant, 5);

    const slots = new TenantSlots({ redis, prefix: PREFIX, limit: 1, leaseMs: 150 });
    const slot = await slots.take('acme', 'job-1');
    expect(slot).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 150)); // its renewal runs
    await slot?.release();

    const queue = new Queue('agent-tasks', { connection: redis, prefix: PREFIX });
    const job = await queue.add('agent-task', { task: 't' });
    const writes = new StepWrites(redis, job, PREFIX, createLogger('test', 'silent'));
    await writes.checkpoint('{"step":1}');
    writes.step({
      runId: 'r',
      step: 1,
      kind: 'action',
      actions: [],
      observations: [],
    } as unknown as StepTrace);
    await writes.settled();
    await forgetJobState(redis, PREFIX, String(job.id));
    await queue.close();

    const shas = new Set(calls.map((call) => call.sha));
    // The ledger's batch and read, the rate limiter's acquire and pause, the token limiter's grant and settle,
    // the tenant slots' take and renew, the step write and the job's forget: every LuaScript of the project.
    expect(shas.size).toBeGreaterThanOrEqual(10);
    const probe = cluster.probe();
    try {
      const slot0 = await probe.cluster('KEYSLOT', PREFIX);
      for (const call of calls) {
        for (const key of call.keys) {
          expect(await probe.cluster('KEYSLOT', key), key).toBe(slot0);
        }
      }
    } finally {
      probe.disconnect();
    }
  }, 60_000);

  it('deleteKeysWithPrefix clears a prefix from every master, its keys spread over several', async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `spread-${i}:k`).map((key) => `plain:${key}`);
    for (const key of keys) await redis.set(key, '1');
    await redis.set('other:k', '1');
    const holders = async () => {
      const counts = await Promise.all(redis.nodes('master').map((node) => node.keys('plain:*')));
      return counts.map((found) => found.length);
    };
    expect((await holders()).filter((n) => n > 0).length).toBeGreaterThan(1);
    await deleteKeysWithPrefix(redis, 'plain');
    expect(await holders()).toEqual([0, 0, 0]);
    expect(await redis.get('other:k')).toBe('1');
  });
});
