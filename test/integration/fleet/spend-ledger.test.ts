// The fleet's spend ledger against the real Redis of REDIS_URL, under a key prefix of its own
// (test-ledger-<random>) whose keys are deleted at the end.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateForJob } from '../../../src/fleet/fleet-gate.js';
import { RateLimiter } from '../../../src/fleet/rate-limiter.js';
import { microUsdDown, microUsdUp } from '../../../src/fleet/spend-money.js';
import { batchScope, dayScope, tenantDayScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger, type SpendLedgerOptions } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-ledger-${randomBytes(4).toString('hex')}`;

let redis: Redis;
let scopeSeq = 0;
/** A batch scope no other test uses. */
const freshBatch = (label: string) => batchScope(`${label}-${++scopeSeq}`);
const ledgerOf = (options: Partial<SpendLedgerOptions> = {}) =>
  new SpendLedger({ redis, prefix: PREFIX, ...options });

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
});

afterAll(async () => {
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('money', () => {
  it('rounds worst cases and actuals up and caps down, to whole micro-dollars', () => {
    expect(microUsdUp(0.0000001)).toBe(1);
    expect(microUsdUp(0.000001)).toBe(1);
    expect(microUsdUp(0)).toBe(0);
    expect(microUsdDown(0.0000019)).toBe(1);
    expect(microUsdDown(5)).toBe(5_000_000);
    expect(microUsdUp(0.57)).toBe(570_000);
    expect(microUsdDown(0.57)).toBe(570_000);
    expect(microUsdUp(0.0000029)).toBe(3);
    expect(microUsdDown(0.0000029)).toBe(2);
    expect(microUsdUp(1.5)).toBe(1_500_000);
    expect(microUsdDown(1e21)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => microUsdUp(1e8)).toThrow(/too large/);
    expect(() => microUsdUp(-1)).toThrow(RangeError);
    expect(() => microUsdUp(Number.NaN)).toThrow(RangeError);
  });

  it('round amounts convert exactly; any other amount is bracketed by its two roundings', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (micro) => {
        const usd = micro / 1e6;
        expect(microUsdUp(usd)).toBe(micro);
        expect(microUsdDown(usd)).toBe(micro);
      }),
    );
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e6, noNaN: true }), (usd) => {
        const up = microUsdUp(usd);
        const down = microUsdDown(usd);
        expect(up / 1e6).toBeGreaterThanOrEqual(usd);
        expect(down / 1e6).toBeLessThanOrEqual(usd);
        expect(up - down).toBeLessThanOrEqual(1);
        expect(up - usd * 1e6).toBeLessThan(1 + 1e-6);
      }),
    );
  });

  it('a cap of 2 micro-dollars holds two bookings of a tenth of a micro-dollar, not three', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('tiny');
    await ledger.setCaps(scope, { maxCostUsd: 0.0000029 });
    const tiny = { tokens: 0, costUsd: 0.0000001 };
    expect((await ledger.reserve([scope], tiny)).ok).toBe(true);
    expect((await ledger.reserve([scope], tiny)).ok).toBe(true);
    expect(await ledger.reserve([scope], tiny)).toMatchObject({ ok: false, reason: 'cost_budget' });
  });
});

describe('caps', () => {
  it('books worst cases until the dollar cap binds, and the refusal names that cap', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('nightly');
    await ledger.setCaps(scope, { maxCostUsd: 0.01 });
    const call = { tokens: 100, costUsd: 0.004 };
    expect(await ledger.reserve([scope], call)).toMatchObject({ ok: true });
    expect(await ledger.reserve([scope], call)).toMatchObject({ ok: true });
    const refused = await ledger.reserve([scope], call);
    expect(refused).toMatchObject({ ok: false, reason: 'cost_budget', scope });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.message).toContain(`cost budget of batch ${scope.slice(6)}`);
    expect(refused.message).toContain('$0.008 reserved');
    expect(await ledger.getSpend(scope)).toMatchObject({
      usedUsd: 0,
      reservedUsd: 0.008,
      reservedTokens: 200,
      capUsd: 0.01,
      capTokens: null,
      liveReservations: 2,
    });
  });

  it('refuses with token_budget when the token cap binds', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('tokens');
    await ledger.setCaps(scope, { maxCostUsd: 1, maxTokens: 1000 });
    expect(await ledger.reserve([scope], { tokens: 600, costUsd: 0.001 })).toMatchObject({ ok: true });
    const refused = await ledger.reserve([scope], { tokens: 401, costUsd: 0.001 });
    expect(refused).toMatchObject({ ok: false, reason: 'token_budget', scope });
    expect(await ledger.reserve([scope], { tokens: 400, costUsd: 0.001 })).toMatchObject({ ok: true });
  });

  it('a scope without caps is unlimited; setCaps replaces the caps', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('open');
    expect(await ledger.reserve([scope], { tokens: 1e9, costUsd: 1e6 })).toMatchObject({ ok: true });
    await ledger.setCaps(scope, { maxTokens: 10 });
    expect((await ledger.getSpend(scope)).capTokens).toBe(10);
    await ledger.setCaps(scope, {});
    expect(await ledger.getSpend(scope)).toMatchObject({ capUsd: null, capTokens: null });
  });

  it('books in every scope or in none: the scope that binds is named and the others are untouched', async () => {
    const ledger = ledgerOf({ dailyCaps: { maxTokens: 1000 } });
    const day = dayScope(Date.UTC(2031, 0, 5, 12));
    const batch = freshBatch('atomic');
    await ledger.setCaps(batch, { maxCostUsd: 10 });
    expect(await ledger.reserve([day, batch], { tokens: 900, costUsd: 0.01 })).toMatchObject({ ok: true });
    const refused = await ledger.reserve([batch, day], { tokens: 200, costUsd: 0.01 });
    expect(refused).toMatchObject({ ok: false, reason: 'token_budget', scope: day });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.message).toContain('daily token cap for 2031-01-05');
    expect(await ledger.getSpend(batch)).toMatchObject({ reservedTokens: 900, liveReservations: 1 });
    expect(await ledger.getSpend(day)).toMatchObject({ reservedTokens: 900, capTokens: 1000 });
  });

  it('takes the tighter of a stored cap and the configured daily cap', async () => {
    const ledger = ledgerOf({ dailyCaps: { maxCostUsd: 5, maxTokens: 100 } });
    const day = dayScope(Date.UTC(2031, 0, 6));
    await ledger.setCaps(day, { maxCostUsd: 1, maxTokens: 1000 });
    expect(await ledger.getSpend(day)).toMatchObject({ capUsd: 1, capTokens: 100 });
  });

  it('refuses bad scopes and amounts', async () => {
    const ledger = ledgerOf();
    await expect(ledger.reserve(['week:1'], { tokens: 1, costUsd: 0 })).rejects.toThrow(/bad spend scope/);
    await expect(ledger.reserve([], { tokens: 1, costUsd: 0 })).rejects.toThrow(/at least one scope/);
    await expect(ledger.reserve([freshBatch('x')], { tokens: -1, costUsd: 0 })).rejects.toThrow(RangeError);
    expect(() => batchScope('')).toThrow(/bad spend scope/);
    expect(() => batchScope('a\nb')).toThrow(/bad spend scope/);
    await expect(ledger.settle('not-a-ticket', { tokens: 0, costUsd: 0 })).rejects.toThrow(
      /not a spend ticket/,
    );
  });
});

describe('settle', () => {
  it('returns the unused part of the reservation and counts the actual as used', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('settle');
    await ledger.setCaps(scope, { maxCostUsd: 0.01, maxTokens: 1000 });
    const first = await ledger.reserve([scope], { tokens: 1000, costUsd: 0.01 });
    if (!first.ok) throw new Error(first.message);
    expect((await ledger.reserve([scope], { tokens: 1, costUsd: 0.000001 })).ok).toBe(false);
    expect(await ledger.settle(first.ticket, { tokens: 300, costUsd: 0.003 })).toEqual({
      [scope]: 'settled',
    });
    expect(await ledger.getSpend(scope)).toMatchObject({
      usedUsd: 0.003,
      usedTokens: 300,
      reservedUsd: 0,
      reservedTokens: 0,
      liveReservations: 0,
    });
    // Exactly what is left fits.
    expect((await ledger.reserve([scope], { tokens: 700, costUsd: 0.007 })).ok).toBe(true);
    expect((await ledger.reserve([scope], { tokens: 1, costUsd: 0 })).ok).toBe(false);
  });

  it('settling twice counts once', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('twice');
    const reserved = await ledger.reserve([scope], { tokens: 50, costUsd: 0.002 });
    if (!reserved.ok) throw new Error(reserved.message);
    const actual = { tokens: 40, costUsd: 0.0015 };
    const [a, b] = await Promise.all([
      ledger.settle(reserved.ticket, actual),
      ledger.settle(reserved.ticket, actual),
    ]);
    expect([a?.[scope], b?.[scope]].sort()).toEqual(['none', 'settled']);
    expect(await ledger.settle(reserved.ticket, actual)).toEqual({ [scope]: 'none' });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedUsd: 0.0015, usedTokens: 40, reservedUsd: 0 });
  });

  it('any process can settle a ticket, in every scope it was booked in', async () => {
    const other = createRedis(REDIS_URL, 'producer');
    try {
      const scopes = [freshBatch('a'), freshBatch('b')];
      const reserved = await ledgerOf().reserve(scopes, { tokens: 10, costUsd: 0.001 });
      if (!reserved.ok) throw new Error(reserved.message);
      const elsewhere = new SpendLedger({ redis: other, prefix: PREFIX });
      expect(await elsewhere.settle(reserved.ticket, { tokens: 5, costUsd: 0.0005 })).toEqual({
        [scopes[0]!]: 'settled',
        [scopes[1]!]: 'settled',
      });
      for (const scope of scopes) {
        expect(await elsewhere.getSpend(scope)).toMatchObject({ usedMicroUsd: 500, reservedMicroUsd: 0 });
      }
    } finally {
      other.disconnect();
    }
  });

  it('tickets are unique', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('unique');
    const tickets = await Promise.all(
      Array.from({ length: 50 }, () => ledger.reserve([scope], { tokens: 1, costUsd: 0 })),
    );
    expect(new Set(tickets.map((t) => (t.ok ? t.ticket : t.message))).size).toBe(50);
    expect((await ledger.getSpend(scope)).liveReservations).toBe(50);
  });
});

describe('expired reservations (a worker that crashed between reserve and settle)', () => {
  it('count as spent at their worst case; a late settle replaces the worst case with the actual', async () => {
    let clock = Date.UTC(2031, 1, 1, 10);
    const ledger = ledgerOf({ reservationTtlMs: 60_000, now: () => clock });
    const scope = freshBatch('crash');
    await ledger.setCaps(scope, { maxCostUsd: 0.01 });
    const crashed = await ledger.reserve([scope], { tokens: 800, costUsd: 0.008 });
    if (!crashed.ok) throw new Error(crashed.message);
    expect(crashed.expiresAt).toBe(clock + 60_000);

    clock += 59_999;
    expect(await ledger.getSpend(scope)).toMatchObject({
      usedUsd: 0,
      reservedUsd: 0.008,
      liveReservations: 1,
    });
    clock += 1;
    expect(await ledger.getSpend(scope)).toMatchObject({
      usedUsd: 0.008,
      usedTokens: 800,
      reservedUsd: 0,
      reservedTokens: 0,
      liveReservations: 0,
    });
    // The worst case of the lost call still counts against the cap.
    expect(await ledger.reserve([scope], { tokens: 1, costUsd: 0.003 })).toMatchObject({
      ok: false,
      reason: 'cost_budget',
    });
    // The worker was only slow: its settle corrects the bill, once.
    expect(await ledger.settle(crashed.ticket, { tokens: 100, costUsd: 0.001 })).toEqual({ [scope]: 'late' });
    expect(await ledger.settle(crashed.ticket, { tokens: 100, costUsd: 0.001 })).toEqual({ [scope]: 'none' });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedUsd: 0.001, usedTokens: 100, reservedUsd: 0 });
    expect((await ledger.reserve([scope], { tokens: 1, costUsd: 0.009 })).ok).toBe(true);
  });

  it('are swept by the next reserve of the scope', async () => {
    let clock = Date.UTC(2031, 1, 2);
    const ledger = ledgerOf({ reservationTtlMs: 1_000, now: () => clock });
    const scope = freshBatch('sweep');
    for (let i = 0; i < 3; i++) await ledger.reserve([scope], { tokens: 10, costUsd: 0.001 });
    clock += 1_000;
    await ledger.reserve([scope], { tokens: 1, costUsd: 0.0001 });
    const [, res, amt, exp] = ledger.keysOf(scope);
    expect(await redis.zcard(res!)).toBe(1);
    expect(await redis.hlen(amt!)).toBe(1);
    expect(await redis.hlen(exp!)).toBe(3);
    expect(await ledger.getSpend(scope)).toMatchObject({ usedTokens: 30, reservedTokens: 1 });
  });
});

describe('keys', () => {
  it('live under the prefix and expire: day scopes after ~3 days, batch scopes after ~30', async () => {
    const ledger = ledgerOf();
    const day = dayScope(Date.UTC(2031, 2, 3));
    const batch = freshBatch('ttl');
    const reserved = await ledger.reserve([day, batch], { tokens: 1, costUsd: 0.001 });
    if (!reserved.ok) throw new Error(reserved.message);
    const [dayState, dayRes] = ledger.keysOf(day);
    const [batchState, batchRes] = ledger.keysOf(batch);
    for (const key of [dayState, dayRes, batchState, batchRes])
      expect(key!.startsWith(`${PREFIX}:`)).toBe(true);
    const days = async (key: string | undefined) => (await redis.pttl(key!)) / 86_400_000;
    expect(await days(dayState)).toBeGreaterThan(2.9);
    expect(await days(dayState)).toBeLessThanOrEqual(3);
    expect(await days(dayRes)).toBeGreaterThan(2.9);
    expect(await days(batchState)).toBeGreaterThan(29.9);
    expect(await days(batchRes)).toBeGreaterThan(29.9);
  });
});

describe('the day scope', () => {
  it('rolls over at midnight UTC: a new day has a new daily budget', async () => {
    let clock = Date.UTC(2031, 3, 10, 23, 59, 0);
    const ledger = ledgerOf({ dailyCaps: { maxCostUsd: 0.01 }, now: () => clock });
    const gate = gateForJob({ ledger, now: () => clock });
    const signal = new AbortController().signal;
    const first = await gate.acquire({ tokens: 100, costUsd: 0.008 }, signal);
    if (!first.ok) throw new Error(first.message);
    await gate.release(first.ticket, { tokens: 100, costUsd: 0.008 });
    expect(await gate.acquire({ tokens: 100, costUsd: 0.005 }, signal)).toMatchObject({
      ok: false,
      reason: 'cost_budget',
      message: expect.stringContaining('daily cost cap for 2031-04-10'),
    });
    clock = Date.UTC(2031, 3, 11, 0, 0, 1);
    const next = await gate.acquire({ tokens: 100, costUsd: 0.005 }, signal);
    expect(next.ok).toBe(true);
    expect((await ledger.getSpend('day:2031-04-10')).usedUsd).toBe(0.008);
    expect((await ledger.getSpend('day:2031-04-11')).reservedUsd).toBe(0.005);
  });

  it('a batch job is booked in its day and its batch; the batch budget binds across days', async () => {
    let clock = Date.UTC(2031, 4, 1, 23, 0);
    const ledger = ledgerOf({ now: () => clock });
    const batch = freshBatch('nightly');
    await ledger.setCaps(batch, { maxCostUsd: 0.01 });
    const gate = gateForJob({ ledger, batchId: batch.slice(6), now: () => clock });
    const signal = new AbortController().signal;
    const first = await gate.acquire({ tokens: 10, costUsd: 0.006 }, signal);
    if (!first.ok) throw new Error(first.message);
    clock += 2 * 3_600_000;
    expect(await gate.acquire({ tokens: 10, costUsd: 0.006 }, signal)).toMatchObject({
      ok: false,
      reason: 'cost_budget',
      message: expect.stringContaining(`budget of batch ${batch.slice(6)}`),
    });
    await gate.release(first.ticket, { tokens: 10, costUsd: 0.002 });
    expect((await ledger.getSpend('day:2031-05-01')).usedUsd).toBe(0.002);
    expect((await ledger.getSpend(batch)).usedUsd).toBe(0.002);
    expect((await gate.acquire({ tokens: 10, costUsd: 0.006 }, signal)).ok).toBe(true);
  });
});

describe('concurrency', () => {
  it('fifty reservers on eight connections: exactly as many as the cap covers get through', async () => {
    const connections = Array.from({ length: 8 }, () => createRedis(REDIS_URL, 'producer'));
    try {
      const scope = freshBatch('race');
      await ledgerOf().setCaps(scope, { maxCostUsd: 0.01 });
      const ledgers = connections.map((c) => new SpendLedger({ redis: c, prefix: PREFIX }));
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => ledgers[i % 8]!.reserve([scope], { tokens: 1, costUsd: 0.001 })),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(10);
    } finally {
      connections.forEach((c) => c.disconnect());
    }
  });

  it('property: concurrent reserve/settle never push used + live reservations above a cap (batches and a tenant)', async () => {
    const WORKERS = 8;
    const connections = Array.from({ length: WORKERS }, () => createRedis(REDIS_URL, 'producer'));
    let refusals = 0;
    let grants = 0;
    const op = fc.record({
      worker: fc.integer({ min: 0, max: WORKERS - 1 }),
      /** 0: batch A only, 1: batch B only, 2: both, 3: the tenant's day only, 4: the tenant's day and both. */
      scopes: fc.integer({ min: 0, max: 4 }),
      worstUsd: fc.double({ min: 0, max: 0.01, noNaN: true }),
      worstTokens: fc.integer({ min: 0, max: 2_000 }),
      spentShare: fc.double({ min: 0, max: 1, noNaN: true }),
      settleAtEnd: fc.boolean(),
    });
    const caps = fc.record({
      aUsd: fc.double({ min: 0.001, max: 0.2, noNaN: true }),
      aTokens: fc.integer({ min: 1, max: 100_000 }),
      bUsd: fc.double({ min: 0.001, max: 0.2, noNaN: true }),
      bTokens: fc.integer({ min: 1, max: 100_000 }),
      // TENANT_DAILY_MAX_*: configured, not stored, as every worker has them.
      tUsd: fc.double({ min: 0.001, max: 0.2, noNaN: true }),
      tTokens: fc.integer({ min: 1, max: 100_000 }),
    });
    try {
      await fc.assert(
        fc.asyncProperty(caps, fc.array(op, { minLength: 200, maxLength: 200 }), async (cap, ops) => {
          const a = freshBatch('prop-a');
          const b = freshBatch('prop-b');
          const t = tenantDayScope(`prop-t-${++scopeSeq}`, Date.UTC(2031, 2, 3));
          const tenantDailyCaps = { maxCostUsd: cap.tUsd, maxTokens: cap.tTokens };
          const ledgers = connections.map(
            (c) => new SpendLedger({ redis: c, prefix: PREFIX, tenantDailyCaps }),
          );
          const monitor = ledgerOf({ tenantDailyCaps });
          await monitor.setCaps(a, { maxCostUsd: cap.aUsd, maxTokens: cap.aTokens });
          await monitor.setCaps(b, { maxCostUsd: cap.bUsd, maxTokens: cap.bTokens });
          const expected = new Map([a, b, t].map((s) => [s, { micro: 0, tokens: 0 }]));
          const violations: string[] = [];
          const check = async () => {
            for (const scope of [a, b, t]) {
              const s = await monitor.getSpend(scope);
              if (s.usedMicroUsd + s.reservedMicroUsd > s.capMicroUsd!)
                violations.push(`${scope} $ ${JSON.stringify(s)}`);
              if (s.usedTokens + s.reservedTokens > s.capTokens!)
                violations.push(`${scope} tokens ${JSON.stringify(s)}`);
            }
          };
          let done = false;
          const watching = (async () => {
            while (!done) await check();
          })();
          const runWorker = async (worker: number) => {
            const ledger = ledgers[worker]!;
            const later: (() => Promise<void>)[] = [];
            for (const o of ops.filter((x) => x.worker === worker)) {
              const scopes = [[a], [b], [a, b], [t], [t, a, b]][o.scopes]!;
              const reserved = await ledger.reserve(scopes, { tokens: o.worstTokens, costUsd: o.worstUsd });
              if (!reserved.ok) {
                refusals++;
                continue;
              }
              grants++;
              const actual = {
                tokens: Math.floor(o.worstTokens * o.spentShare),
                costUsd: o.worstUsd * o.spentShare,
              };
              const settle = async () => {
                const statuses = await ledger.settle(reserved.ticket, actual);
                for (const scope of scopes) {
                  if (statuses[scope] !== 'settled') violations.push(`${scope} not settled`);
                  const e = expected.get(scope)!;
                  e.micro += microUsdUp(actual.costUsd);
                  e.tokens += actual.tokens;
                }
              };
              if (o.settleAtEnd) later.push(settle);
              else await settle();
            }
            for (const settle of later) await settle();
          };
          await Promise.all(Array.from({ length: WORKERS }, (_, w) => runWorker(w)));
          done = true;
          await watching;
          await check();
          expect(violations).toEqual([]);
          for (const scope of [a, b, t]) {
            const s = await monitor.getSpend(scope);
            expect(s).toMatchObject({ reservedMicroUsd: 0, reservedTokens: 0, liveReservations: 0 });
            expect(s.usedMicroUsd).toBe(expected.get(scope)!.micro);
            expect(s.usedTokens).toBe(expected.get(scope)!.tokens);
          }
        }),
        { numRuns: 15, endOnFailure: true },
      );
      // The caps were tight enough to bind, and loose enough to let calls through.
      expect(refusals).toBeGreaterThan(0);
      expect(grants).toBeGreaterThan(0);
    } finally {
      connections.forEach((c) => c.disconnect());
    }
  });
});

describe('one round trip per step: settle, pause check and booking in one script', () => {
  it('book settles the earlier ticket first, then books the next call', async () => {
    const ledger = ledgerOf();
    const scopes = [freshBatch('fold-a'), freshBatch('fold-b')];
    await ledger.setCaps(scopes[1]!, { maxCostUsd: 0.01 });
    const first = await ledger.reserve(scopes, { tokens: 1000, costUsd: 0.008 });
    if (!first.ok) throw new Error(first.message);
    // The cap only has room for the next worst case once the first is settled: the settle comes first.
    const booking = await ledger.book(
      scopes,
      { tokens: 500, costUsd: 0.005 },
      {
        settleFirst: { ticket: first.ticket, actual: { tokens: 300, costUsd: 0.003 } },
      },
    );
    expect(booking.reservation?.ok).toBe(true);
    expect(booking.pausedMs).toBe(0);
    expect(booking.settled).toEqual({ [scopes[0]!]: 'settled', [scopes[1]!]: 'settled' });
    expect(await ledger.getSpend(scopes[1]!)).toMatchObject({
      usedMicroUsd: 3_000,
      reservedMicroUsd: 5_000,
      liveReservations: 1,
    });
  });

  it('a refused booking still settles the earlier ticket', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('fold-refused');
    await ledger.setCaps(scope, { maxCostUsd: 0.01 });
    const first = await ledger.reserve([scope], { tokens: 10, costUsd: 0.004 });
    if (!first.ok) throw new Error(first.message);
    const booking = await ledger.book(
      [scope],
      { tokens: 10, costUsd: 0.02 },
      {
        settleFirst: { ticket: first.ticket, actual: { tokens: 10, costUsd: 0.004 } },
      },
    );
    expect(booking.reservation).toMatchObject({ ok: false, reason: 'cost_budget' });
    expect(booking.settled).toEqual({ [scope]: 'settled' });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 4_000, liveReservations: 0 });
  });

  it('while the pause key lives nothing is booked, the settle still is, and the pause left is told', async () => {
    const ledger = ledgerOf();
    const scope = freshBatch('fold-paused');
    const pauseKey = `${PREFIX}:{fleet-ledger}:rate:test:pause`;
    const first = await ledger.reserve([scope], { tokens: 10, costUsd: 0.001 });
    if (!first.ok) throw new Error(first.message);
    await redis.set(pauseKey, '1', 'PX', 5_000);
    const booking = await ledger.book(
      [scope],
      { tokens: 10, costUsd: 0.001 },
      {
        settleFirst: { ticket: first.ticket, actual: { tokens: 5, costUsd: 0.0005 } },
        pauseKey,
      },
    );
    expect(booking.reservation).toBeNull();
    expect(booking.pausedMs).toBeGreaterThan(4_000);
    expect(booking.settled).toEqual({ [scope]: 'settled' });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 500, liveReservations: 0 });
    await redis.del(pauseKey);
    const after = await ledger.book([scope], { tokens: 10, costUsd: 0.001 }, { pauseKey });
    expect(after).toMatchObject({ reservation: { ok: true }, pausedMs: 0, settled: null });
  });

  it('refuses to settle first a ticket of other scopes', async () => {
    const ledger = ledgerOf();
    const first = await ledger.reserve([freshBatch('fold-x')], { tokens: 1, costUsd: 0 });
    if (!first.ok) throw new Error(first.message);
    await expect(
      ledger.book(
        [freshBatch('fold-y')],
        { tokens: 1, costUsd: 0 },
        {
          settleFirst: { ticket: first.ticket, actual: { tokens: 1, costUsd: 0 } },
        },
      ),
    ).rejects.toThrow(RangeError);
  });

  it('the gate folds a settle into the next booking made in the same turn, and sends it alone otherwise', async () => {
    const ledger = ledgerOf();
    // A batch with a budget: every booking is waited for (see the next describe for one without).
    const calls: string[] = [];
    const settle = ledger.settle.bind(ledger);
    const book = ledger.book.bind(ledger);
    ledger.settle = (...args) => (calls.push('settle'), settle(...args));
    ledger.book = (scopes, worstCase, options) => (
      calls.push(options?.settleFirst ? 'book+settle' : 'book'),
      book(scopes, worstCase, options)
    );
    const batchId = `fold-gate-${++scopeSeq}`;
    await ledger.setCaps(batchScope(batchId), { maxCostUsd: 100 });
    const gate = gateForJob({ ledger, batchId });
    const signal = new AbortController().signal;
    const worst = { tokens: 100, costUsd: 0.01 };

    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    // A step whose tools did no I/O: the run asks for its next call before the turn ends.
    const released = gate.release(first.ticket, { tokens: 40, costUsd: 0.004 });
    const second = await gate.acquire(worst, signal);
    await released;
    if (!second.ok) throw new Error(second.message);
    expect(calls).toEqual(['book', 'book+settle']);

    // A booking that fails before its script runs (Redis refusing it, say) still lets the folded settle through.
    const third = await gate.acquire(worst, signal);
    if (!third.ok) throw new Error(third.message);
    const settled = gate.release(third.ticket, { tokens: 20, costUsd: 0.002 });
    ledger.book = () => Promise.reject(new Error('OOM command not allowed when used memory > maxmemory'));
    await expect(gate.acquire(worst, signal)).rejects.toThrow(/OOM/);
    await settled;
    expect(calls).toEqual(['book', 'book+settle', 'book', 'settle']);
    calls.length = 2;

    // The last call of a run: nothing follows, the settle goes alone at the end of the turn.
    await gate.release(second.ticket, { tokens: 10, costUsd: 0.001 });
    expect(calls).toEqual(['book', 'book+settle', 'settle']);
    expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
      usedMicroUsd: 7_000,
      reservedMicroUsd: 0,
      liveReservations: 0,
    });
  });
});

describe('bookings not waited for, where no cap applies', () => {
  const worst = { tokens: 100, costUsd: 0.01 };
  const signal = new AbortController().signal;
  /** Which way each booking of the gate went: waited for (`book`) or not (`bookInFlight`). */
  const bookingsOf = (ledger: SpendLedger) => {
    const ways: ('waited' | 'in flight')[] = [];
    const book = ledger.book.bind(ledger);
    const bookInFlight = ledger.bookInFlight.bind(ledger);
    ledger.book = (...args) => (ways.push('waited'), book(...args));
    ledger.bookInFlight = (...args) => (ways.push('in flight'), bookInFlight(...args));
    return ways;
  };
  /**
   * Lets the answers of the bookings asked for so far arrive: they leave at the end of the turn, then one round
   * trip on the same connection.
   */
  const answersArrived = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    await redis.ping();
    await new Promise((resolve) => setImmediate(resolve));
  };

  it('a booking reports whether a cap applies; bookInFlight books whatever the pause and the caps', async () => {
    const ledger = ledgerOf();
    const free = freshBatch('free');
    const capped = freshBatch('capped');
    await ledger.setCaps(capped, { maxCostUsd: 0.005 });
    expect((await ledger.book([free], worst)).capped).toBe(false);
    const both = await ledger.book([free, capped], { tokens: 1, costUsd: 0 });
    expect(both.capped).toBe(true);
    if (both.reservation?.ok) await ledger.settle(both.reservation.ticket, { tokens: 0, costUsd: 0 });
    expect(
      (await ledgerOf({ dailyCaps: { maxTokens: 10 ** 6 } }).book([dayScope(Date.now())], worst)).capped,
    ).toBe(true);

    const pauseKey = `${PREFIX}:{fleet-ledger}:rate:inflight:pause`;
    await redis.set(pauseKey, '1', 'PX', 5_000);
    const { ticket, booking } = ledger.bookInFlight([capped], worst, { pauseKey });
    // Over the cap and while paused: booked anyway, since the call is made; the answer says both.
    expect(await booking).toMatchObject({ reservation: { ok: true, ticket }, capped: true });
    expect((await booking).pausedMs).toBeGreaterThan(4_000);
    expect(await ledger.getSpend(capped)).toMatchObject({ reservedMicroUsd: 10_000, liveReservations: 1 });
    await ledger.settle(ticket, { tokens: 10, costUsd: 0.001 });
    expect(await ledger.getSpend(capped)).toMatchObject({ usedMicroUsd: 1_000, liveReservations: 0 });
    await redis.del(pauseKey);
  });

  it('after one booking shows no cap, the job’s calls go out at once and the ledger still counts every one', async () => {
    const ledger = ledgerOf();
    const batchId = `inflight-${++scopeSeq}`;
    const ways = bookingsOf(ledger);
    const gate = gateForJob({ ledger, batchId });

    let decision = await gate.acquire(worst, signal);
    let spentUsd = 0;
    for (let call = 1; call <= 5; call++) {
      if (!decision.ok) throw new Error(decision.message);
      const actual = { tokens: 10 * call, costUsd: 0.001 * call };
      spentUsd += actual.costUsd;
      await answersArrived(); // the model call: its booking's answer arrives meanwhile
      void gate.release(decision.ticket, actual);
      decision = await gate.acquire(worst, signal);
    }
    expect(ways).toEqual(['waited', ...Array<string>(5).fill('in flight')]);
    if (!decision.ok) throw new Error(decision.message);
    await gate.release(decision.ticket, { tokens: 0, costUsd: 0 });
    const spend = await ledger.getSpend(batchScope(batchId));
    expect(spend).toMatchObject({
      usedMicroUsd: microUsdUp(spentUsd),
      reservedMicroUsd: 0,
      liveReservations: 0,
    });
    expect(spend.usedTokens).toBe(150);
  });

  it('a pause another process set is seen at the next answer: from then on every booking is waited for', async () => {
    const ledger = ledgerOf();
    const limiter = new RateLimiter({
      redis,
      prefix: PREFIX,
      name: `inflight-pause-${++scopeSeq}`,
      limit: 1,
    });
    const ways = bookingsOf(ledger);
    const gate = gateForJob({ ledger, limiter, limitRequests: false, batchId: `inflight-p-${scopeSeq}` });
    expect((await gate.acquire(worst, signal)).ok).toBe(true);
    // Another worker meets a 429 and pauses the fleet for 400 ms; this process does not know yet.
    await redis.set(limiter.pauseKey, '1', 'PX', 400);
    expect((await gate.acquire(worst, signal)).ok).toBe(true);
    expect(limiter.pausedHere).toBe(false);
    // That call's booking answers that the fleet is paused: the next call waits the pause out.
    await answersArrived();
    expect(limiter.pausedHere).toBe(true);
    const started = Date.now();
    expect((await gate.acquire(worst, signal)).ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // A booking waited for met the pause; once it is over the call goes (booked either way).
    expect(ways.slice(0, 3)).toEqual(['waited', 'in flight', 'waited']);
  });

  it('a batch with a budget waits for every booking, and one that gets a cap while it runs waits from then on', async () => {
    const ledger = ledgerOf();
    const budgeted = `inflight-capped-${++scopeSeq}`;
    await ledger.setCaps(batchScope(budgeted), { maxCostUsd: 1 });
    const ways = bookingsOf(ledger);
    const gate = gateForJob({ ledger, batchId: budgeted });
    for (let call = 0; call < 3; call++) {
      const decision = await gate.acquire(worst, signal);
      if (decision.ok) await gate.release(decision.ticket, { tokens: 1, costUsd: 0.001 });
    }
    expect(ways).toEqual(['waited', 'waited', 'waited']);

    ways.length = 0;
    const later = `inflight-later-${++scopeSeq}`;
    const laterGate = gateForJob({ ledger, batchId: later });
    expect((await laterGate.acquire(worst, signal)).ok).toBe(true);
    // A cap below what is reserved already: the call that goes out before the gate learns of it passes it (and
    // is booked), the next one waits for its booking and is refused.
    await ledger.setCaps(batchScope(later), { maxCostUsd: 0.015 });
    expect((await laterGate.acquire(worst, signal)).ok).toBe(true);
    await answersArrived();
    expect(await laterGate.acquire(worst, signal)).toMatchObject({ ok: false, reason: 'cost_budget' });
    expect(ways).toEqual(['waited', 'in flight', 'waited']);
    expect(await ledger.getSpend(batchScope(later))).toMatchObject({
      reservedMicroUsd: 20_000,
      liveReservations: 2,
    });
  });

  it('a booking not waited for that fails makes the job wait for its bookings, which then fail', async () => {
    const ledger = ledgerOf();
    const errors: unknown[] = [];
    const gate = gateForJob({
      ledger,
      batchId: `inflight-err-${++scopeSeq}`,
      onError: (e) => errors.push(e),
    });
    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    const bookInFlight = ledger.bookInFlight.bind(ledger);
    ledger.bookInFlight = (scopes, worstCase, options) => {
      const made = bookInFlight(scopes, worstCase, options);
      return { ticket: made.ticket, booking: made.booking.then(() => Promise.reject(new Error('READONLY'))) };
    };
    expect((await gate.acquire(worst, signal)).ok).toBe(true);
    await answersArrived();
    expect(errors).toHaveLength(1);
    ledger.book = () => Promise.reject(new Error('READONLY You can’t write against a read only replica.'));
    await expect(gate.acquire(worst, signal)).rejects.toThrow(/READONLY/);
  });
  it('a call whose booking failed before it ran is recorded at its settle, and the job waits from then on', async () => {
    const ledger = ledgerOf();
    const batchId = `inflight-lost-${++scopeSeq}`;
    const ways = bookingsOf(ledger);
    const gate = gateForJob({ ledger, batchId, onError: () => undefined });
    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    await gate.release(first.ticket, { tokens: 10, costUsd: 0.001 });
    // The next booking goes to a Redis that refuses it before running anything (OOM, READONLY, a dead socket).
    const dead = new Redis({
      port: 1,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    const deadLedger = new SpendLedger({ redis: dead, prefix: PREFIX });
    const bookInFlight = ledger.bookInFlight.bind(ledger);
    ledger.bookInFlight = (...args) => deadLedger.bookInFlight(...args);
    try {
      const second = await gate.acquire(worst, signal);
      if (!second.ok) throw new Error(second.message);
      await gate.release(second.ticket, { tokens: 20, costUsd: 0.002 });
    } finally {
      ledger.bookInFlight = bookInFlight;
      dead.disconnect();
    }
    expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
      usedMicroUsd: 3_000,
      usedTokens: 30,
      liveReservations: 0,
    });
    const third = await gate.acquire(worst, signal);
    if (third.ok) await gate.release(third.ticket, { tokens: 0, costUsd: 0 });
    expect(ways).toEqual(['waited', 'waited']); // the failed one went through the stand-in
  });

  it('a call the ledger refuses before sending anything throws, and the settle waiting goes alone', async () => {
    const ledger = ledgerOf();
    const batchId = `inflight-throw-${++scopeSeq}`;
    const gate = gateForJob({ ledger, batchId });
    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    await answersArrived();
    const released = gate.release(first.ticket, { tokens: 10, costUsd: 0.001 });
    await Promise.resolve();
    await expect(gate.acquire({ tokens: 1e14, costUsd: 0.01 }, signal)).rejects.toThrow(RangeError);
    await released;
    expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
      usedMicroUsd: 1_000,
      liveReservations: 0,
    });
  });

  it('one unanswered booking at a time: a call asked for before the last answer waits for its booking', async () => {
    const ledger = ledgerOf();
    const ways = bookingsOf(ledger);
    const gate = gateForJob({ ledger, batchId: `inflight-one-${++scopeSeq}` });
    const tickets: string[] = [];
    for (let call = 0; call < 3; call++) {
      const decision = await gate.acquire(worst, signal);
      if (!decision.ok) throw new Error(decision.message);
      tickets.push(decision.ticket);
    }
    // The first was waited for; the second went at once; the third came before the second's answer.
    expect(ways).toEqual(['waited', 'in flight', 'waited']);
    await Promise.all(tickets.map((ticket) => gate.release(ticket, { tokens: 1, costUsd: 0.001 })));
  });

  it('the settle of a call waits for the answer to its booking', async () => {
    const ledger = ledgerOf();
    const batchId = `inflight-order-${++scopeSeq}`;
    const gate = gateForJob({ ledger, batchId });
    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    await answersArrived();
    await gate.release(first.ticket, { tokens: 1, costUsd: 0.001 });
    const events: string[] = [];
    const bookInFlight = ledger.bookInFlight.bind(ledger);
    ledger.bookInFlight = (...args) => {
      const made = bookInFlight(...args);
      // An answer that comes late (a script re-sent after the server lost its cache, say).
      const late = made.booking.then(async (answer) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        events.push('answer');
        return answer;
      });
      return { ticket: made.ticket, booking: late };
    };
    const settle = ledger.settle.bind(ledger);
    ledger.settle = (...args) => (events.push('settle'), settle(...args));
    const second = await gate.acquire(worst, signal);
    if (!second.ok) throw new Error(second.message);
    await gate.release(second.ticket, { tokens: 2, costUsd: 0.002 });
    expect(events).toEqual(['answer', 'settle']);
    expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
      usedMicroUsd: 3_000,
      liveReservations: 0,
    });
  });

  it('with MODEL_RPM every booking is waited for', async () => {
    const ledger = ledgerOf();
    const ways = bookingsOf(ledger);
    const limiter = new RateLimiter({
      redis,
      prefix: PREFIX,
      name: `inflight-rpm-${++scopeSeq}`,
      limit: 1000,
    });
    const gate = gateForJob({ ledger, limiter, limitRequests: true, batchId: `inflight-rpm-${scopeSeq}` });
    for (let call = 0; call < 3; call++) {
      const decision = await gate.acquire(worst, signal);
      await answersArrived();
      if (decision.ok) await gate.release(decision.ticket, { tokens: 1, costUsd: 0.001 });
    }
    expect(ways).toEqual(['waited', 'waited', 'waited']);
  });
});
