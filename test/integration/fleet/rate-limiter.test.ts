// The fleet's request limiter against the real Redis of REDIS_URL, under a key prefix of its own
// (test-rate-<random>) whose keys are deleted at the end. Windows of one second keep it fast; MODEL_RPM uses 60 s.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetGate } from '../../../src/fleet/fleet-gate.js';
import { RateLimiter, type RateLimiterOptions } from '../../../src/fleet/rate-limiter.js';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { TokenRateLimiter } from '../../../src/fleet/token-rate-limiter.js';
import { createRedis } from '../../../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-rate-${randomBytes(4).toString('hex')}`;

let redis: Redis;
let connections: Redis[];
let nameSeq = 0;

/** A limiter over a fresh name per test, on the shared connection unless one is given. */
const limiterOf = (options: Partial<RateLimiterOptions> & { limit: number }, name = `t${++nameSeq}`) =>
  new RateLimiter({ redis, prefix: PREFIX, name, ...options });

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
  connections = Array.from({ length: 8 }, () => createRedis(REDIS_URL, 'producer'));
});

afterAll(async () => {
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  connections?.forEach((c) => c.disconnect());
});

const abortReason = () => new Error('job cancelled');

describe('requests per window', () => {
  it('many acquirers on eight connections get at most the limit in any window', async () => {
    const LIMIT = 10;
    const WINDOW = 1_000;
    const name = `window-${++nameSeq}`;
    const limiters = connections.map((c) =>
      limiterOf({ redis: c, limit: LIMIT, windowMs: WINDOW, maxPollMs: 200 }, name),
    );
    const started = Date.now();
    const grants = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) => limiters[i % limiters.length]!.acquire()),
    );
    const elapsed = Date.now() - started;
    const times = grants.map((g) => g.grantedAt).sort((a, b) => a - b);
    // Sliding: any LIMIT + 1 consecutive grants span at least a whole window.
    for (let i = 0; i + LIMIT < times.length; i++) {
      expect(times[i + LIMIT]! - times[i]!).toBeGreaterThanOrEqual(WINDOW);
    }
    // Thirty grants at ten per second need two more windows after the first burst, and not much more.
    expect(elapsed).toBeGreaterThanOrEqual(2 * WINDOW - 50);
    expect(elapsed).toBeLessThan(4 * WINDOW);
    // The first burst is granted at once.
    expect(times[LIMIT - 1]! - times[0]!).toBeLessThan(WINDOW / 2);
  });

  it('tryAcquire says how long until the oldest grant leaves the window', async () => {
    const limiter = limiterOf({ limit: 2, windowMs: 5_000 });
    expect((await limiter.tryAcquire()).ok).toBe(true);
    expect((await limiter.tryAcquire()).ok).toBe(true);
    const refused = await limiter.tryAcquire();
    expect(refused).toMatchObject({ ok: false, paused: false });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.waitMs).toBeGreaterThan(4_000);
    expect(refused.waitMs).toBeLessThanOrEqual(5_000);
  });

  it('limiters of different names or prefixes do not share a window', async () => {
    const a = limiterOf({ limit: 1, windowMs: 10_000 });
    const b = limiterOf({ limit: 1, windowMs: 10_000 });
    expect((await a.tryAcquire()).ok).toBe(true);
    expect((await b.tryAcquire()).ok).toBe(true);
    expect((await a.tryAcquire()).ok).toBe(false);
  });

  it('refuses a bad limit', () => {
    expect(() => limiterOf({ limit: 0 })).toThrow(RangeError);
    expect(() => limiterOf({ limit: 1.5 })).toThrow(RangeError);
  });
});

describe('pause after a 429', () => {
  it('blocks every acquirer of the fleet until it expires', async () => {
    const name = `pause-${++nameSeq}`;
    const limiters = connections.map((c) => limiterOf({ redis: c, limit: 100, windowMs: 1_000 }, name));
    const started = Date.now();
    await limiters[0]!.pause(600);
    expect(await limiters[1]!.pausedFor()).toBeGreaterThan(500);
    expect(await limiters[2]!.tryAcquire()).toMatchObject({ ok: false, paused: true });
    const waits = await Promise.all(limiters.map((l) => l.acquire().then(() => Date.now() - started)));
    for (const waited of waits) expect(waited).toBeGreaterThanOrEqual(600);
    expect(Math.max(...waits)).toBeLessThan(1_500);
    expect(await limiters[0]!.pausedFor()).toBe(0);
  });

  it('never shortens a longer pause; a pause of 0 does nothing', async () => {
    const limiter = limiterOf({ limit: 1 });
    await limiter.pause(0);
    expect(await limiter.pausedFor()).toBe(0);
    await limiter.pause(5_000);
    await limiter.pause(100);
    expect(await limiter.pausedFor()).toBeGreaterThan(4_000);
  });

  it("a 429 reported to the fleet gate pauses the fleet's limiter and is told to the caller", async () => {
    const limiter = limiterOf({ limit: 100, windowMs: 1_000 });
    const told: number[] = [];
    const gate = new FleetGate({
      ledger: new SpendLedger({ redis, prefix: PREFIX }),
      limiter,
      scopes: [batchScope(`rate-${nameSeq}`)],
      onRateLimited: (ms) => told.push(ms),
    });
    gate.rateLimited(400);
    gate.rateLimited(undefined);
    expect(told).toEqual([400, 1_000]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await limiter.pausedFor()).toBeGreaterThan(800);
    const started = Date.now();
    const decision = await gate.acquire({ tokens: 1, costUsd: 0.001 }, new AbortController().signal);
    expect(decision.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
  });
});

describe('pause without MODEL_RPM', () => {
  it('the booking itself checks the pause: nothing is booked until it ends, then the call goes', async () => {
    const limiter = limiterOf({ limit: 1, windowMs: 1_000 });
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`pause-only-${nameSeq}`);
    const gate = new FleetGate({ ledger, limiter, limitRequests: false, scopes: [scope] });
    await limiter.pause(400);
    const started = Date.now();
    const acquiring = gate.acquire({ tokens: 1, costUsd: 0.001 }, new AbortController().signal);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect((await ledger.getSpend(scope)).liveReservations).toBe(0);
    const decision = await acquiring;
    expect(decision.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect((await ledger.getSpend(scope)).liveReservations).toBe(1);
    // Without a request limit the window log is never written.
    expect(await redis.exists(limiter.keys()[0]!)).toBe(0);
  });
});

describe('abort', () => {
  it('an acquirer waiting for a slot stops at once with the signal reason', async () => {
    const limiter = limiterOf({ limit: 1, windowMs: 10_000 });
    await limiter.acquire();
    const controller = new AbortController();
    const reason = abortReason();
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();
    await expect(limiter.acquire(controller.signal)).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('an acquirer waiting out a pause stops too, and an aborted signal never takes a slot', async () => {
    const limiter = limiterOf({ limit: 1, windowMs: 10_000 });
    const aborted = new AbortController();
    const reason = abortReason();
    aborted.abort(reason);
    await expect(limiter.acquire(aborted.signal)).rejects.toBe(reason);
    expect((await limiter.tryAcquire()).ok).toBe(true);

    const paused = limiterOf({ limit: 10, windowMs: 10_000 });
    await paused.pause(10_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 100);
    await expect(paused.acquire(controller.signal)).rejects.toBe(reason);
  });

  it('the fleet gate gives up a wait at the limiter when the run is cancelled', async () => {
    const limiter = limiterOf({ limit: 1, windowMs: 10_000 });
    await limiter.acquire();
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`abort-${nameSeq}`);
    const gate = new FleetGate({ ledger, limiter, scopes: [scope] });
    const controller = new AbortController();
    const reason = abortReason();
    setTimeout(() => controller.abort(reason), 100);
    await expect(gate.acquire({ tokens: 1, costUsd: 0.001 }, controller.signal)).rejects.toBe(reason);
    expect((await ledger.getSpend(scope)).liveReservations).toBe(0);
  });
});

describe("the run's deadline", () => {
  it('a wait for a request slot that cannot end before the deadline is given up at once, as deadline', async () => {
    const limiter = limiterOf({ limit: 1, windowMs: 30_000 });
    await limiter.acquire();
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`deadline-${nameSeq}`);
    const gate = new FleetGate({ ledger, limiter, scopes: [scope] });
    // The run's signal stays live: only the deadline (2 s away) can end the wait, and the slot frees in 30 s.
    const started = Date.now();
    const decision = await gate.acquire({ tokens: 1, costUsd: 0.001 }, AbortSignal.timeout(20_000), {
      timeLeftMs: 2_000,
    });
    expect(decision).toMatchObject({ ok: false, reason: 'deadline' });
    if (decision.ok) throw new Error('unreachable');
    expect(decision.message).toMatch(
      /^The run's deadline comes first: MODEL_RPM would make the call wait \d+ ms/,
    );
    expect(Date.now() - started).toBeLessThan(1_500);
    expect((await ledger.getSpend(scope)).liveReservations).toBe(0);
    // With time enough the same wait is waited out.
    const quick = limiterOf({ limit: 1, windowMs: 300 });
    await quick.acquire();
    const waited = new FleetGate({ ledger, limiter: quick, scopes: [scope] });
    const later = await waited.acquire({ tokens: 1, costUsd: 0.001 }, new AbortController().signal, {
      timeLeftMs: 5_000,
    });
    expect(later.ok).toBe(true);
  });

  it("the fleet's pause after a 429 that outlasts the deadline ends the wait at once, with or without MODEL_RPM", async () => {
    for (const limitRequests of [true, false]) {
      const limiter = limiterOf({ limit: 10, windowMs: 1_000 });
      await limiter.pause(30_000);
      const ledger = new SpendLedger({ redis, prefix: PREFIX });
      const gate = new FleetGate({
        ledger,
        limiter,
        limitRequests,
        scopes: [batchScope(`paused-${nameSeq}`)],
      });
      const started = Date.now();
      const decision = await gate.acquire({ tokens: 1, costUsd: 0.001 }, AbortSignal.timeout(20_000), {
        timeLeftMs: 1_000,
      });
      expect(decision).toMatchObject({ ok: false, reason: 'deadline' });
      if (decision.ok) throw new Error('unreachable');
      expect(decision.message).toContain("the fleet's pause after a 429");
      expect(Date.now() - started).toBeLessThan(900);
    }
  });

  it('a token wait never sleeps past the deadline', async () => {
    const model = `tpm-deadline-${randomBytes(3).toString('hex')}`;
    const tokens = new TokenRateLimiter({ redis, prefix: PREFIX, model, limit: 1_000, windowMs: 30_000 });
    const first = await tokens.tryGrant(800);
    expect(first.ok).toBe(true);
    const gate = new FleetGate({ ledger: new SpendLedger({ redis, prefix: PREFIX }), tokens, scopes: [] });
    const started = Date.now();
    // The 800 tokens are in flight: they may settle any moment, so the wait is tried until the deadline.
    const decision = await gate.acquire({ tokens: 300, costUsd: 0.001 }, AbortSignal.timeout(20_000), {
      timeLeftMs: 600,
    });
    const elapsed = Date.now() - started;
    expect(decision).toMatchObject({ ok: false, reason: 'deadline' });
    if (decision.ok) throw new Error('unreachable');
    expect(decision.message).toContain('MODEL_TPM');
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(3_000);
  });
});
