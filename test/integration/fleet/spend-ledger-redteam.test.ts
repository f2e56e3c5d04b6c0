// Red-team checks of the spend ledger's one-script-per-turn batching against the real Redis of REDIS_URL:
// concurrent batched bookings from two connections near a cap, the same batch payload run twice (as ioredis
// re-sends it after a reconnect), and a corrupted scope in a multi-scope booking.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microUsdUp } from '../../../src/fleet/spend-money.js';
import { batchScope, dayScope, tenantDayScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-ledger-rt-${randomBytes(4).toString('hex')}`;
let a: Redis;
let b: Redis;
let seq = 0;

beforeAll(() => {
  a = createRedis(REDIS_URL, 'producer');
  b = createRedis(REDIS_URL, 'producer');
});

afterAll(async () => {
  if (!a) return;
  const keys = await a.keys(`${PREFIX}:*`);
  if (keys.length > 0) await a.del(...keys);
  a.disconnect();
  b.disconnect();
});

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('red team: batched bookings', () => {
  it('two processes, 150 bookings each in one turn (split at 64), three scopes: no cap is passed', async () => {
    const day = dayScope(Date.UTC(2032, 0, 1 + ++seq));
    const tenant = tenantDayScope(`rt-${seq}`, Date.UTC(2032, 0, 1 + seq));
    const batch = batchScope(`rt-${seq}`);
    const opts = { prefix: PREFIX, dailyCaps: { maxCostUsd: 1.0 }, tenantDailyCaps: { maxTokens: 9_000 } };
    const la = new SpendLedger({ redis: a, ...opts });
    const lb = new SpendLedger({ redis: b, ...opts });
    await la.setCaps(batch, { maxCostUsd: 0.7 });
    const worst = { tokens: 100, costUsd: 0.010001 };
    const scopes = [day, tenant, batch];
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => (i % 2 ? la : lb).reserve(scopes, worst)),
    );
    const ok = results.filter((r) => r.ok);
    // The batch's $0.70 binds first: 69 of $0.010001 fit (0.690069), 70 do not.
    expect(ok).toHaveLength(69);
    for (const s of scopes) {
      const spend = await la.getSpend(s);
      expect(spend.reservedMicroUsd).toBe(69 * 10_001);
      expect(spend.liveReservations).toBe(69);
    }
    // Settle half with a cached-price actual and half as failed calls charged their worst case, from both.
    const actual = { tokens: 37, costUsd: (1000 * 0.15 + 200 * 0.075 + 50 * 0.6) / 1e6 };
    await Promise.all(
      ok.map((r, i) =>
        r.ok ? (i % 2 ? la : lb).settle(r.ticket, i % 3 ? actual : worst) : Promise.resolve(),
      ),
    );
    const worstCount = ok.filter((_, i) => i % 3 === 0).length;
    for (const s of scopes) {
      const spend = await la.getSpend(s);
      expect(spend).toMatchObject({ reservedMicroUsd: 0, liveReservations: 0 });
      expect(spend.usedMicroUsd).toBe(worstCount * 10_001 + (69 - worstCount) * microUsdUp(actual.costUsd));
    }
  });
});

describe('red team: a batch script run twice (a re-send after a reconnect)', () => {
  it('settles, a settle folded into a booking, a late settle, a record and a refusal count once', async () => {
    let now = Date.parse('2032-03-01T10:00:00Z');
    const ledger = new SpendLedger({ redis: a, prefix: PREFIX, now: () => now, reservationTtlMs: 1_000 });
    const day = dayScope(now);
    const scope = batchScope(`rt-twice-${++seq}`);
    const scopes = [day, scope];
    await ledger.setCaps(scope, { maxCostUsd: 0.05 });
    const worst = { tokens: 100, costUsd: 0.01 };
    const expired = await ledger.reserve(scopes, worst);
    now += 2_000; // expired (not swept yet)
    const [held, folded] = await Promise.all([ledger.reserve(scopes, worst), ledger.reserve(scopes, worst)]);
    if (!expired.ok || !held.ok || !folded.ok) throw new Error('not booked');
    const unbooked = ledger.bookInFlight([batchScope(`rt-never-${seq}`)], worst).ticket; // other scope
    await turn();
    await new Promise((r) => setTimeout(r, 20));

    // Capture the one batch script of the next turn, then run it again as is.
    const sent: unknown[][] = [];
    const evalsha = a.evalsha.bind(a);
    (a as unknown as { evalsha: (...x: unknown[]) => unknown }).evalsha = (...args: unknown[]) => {
      sent.push(args);
      return (evalsha as (...x: unknown[]) => unknown)(...args);
    };
    let outcomes: PromiseSettledResult<unknown>[];
    try {
      outcomes = await Promise.allSettled([
        ledger.settle(held.ticket, { tokens: 3, costUsd: 0.002 }),
        ledger.book(scopes, worst, {
          settleFirst: { ticket: folded.ticket, actual: { tokens: 4, costUsd: 0.003 } },
        }),
        ledger.settle(expired.ticket, { tokens: 5, costUsd: 0.004 }),
        ledger.settleOrRecord(unbooked, { tokens: 6, costUsd: 0.005 }),
        ledger.reserve(scopes, { tokens: 1, costUsd: 0.5 }), // refused
      ]);
    } finally {
      (a as unknown as { evalsha: unknown }).evalsha = evalsha;
    }
    expect(sent).toHaveLength(1);
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill('fulfilled'));
    const before = await Promise.all(scopes.map((s) => ledger.getSpend(s)));
    expect(before[1]).toMatchObject({ usedMicroUsd: 2_000 + 3_000 + 4_000, reservedMicroUsd: 10_000 });
    const replay = (await (evalsha as (...x: unknown[]) => Promise<unknown>)(...sent[0]!)) as unknown[];
    expect(replay).toHaveLength(5);
    const after = await Promise.all(scopes.map((s) => ledger.getSpend(s)));
    expect(after).toEqual(before);
    const never = await ledger.getSpend(batchScope(`rt-never-${seq}`));
    expect(never.usedMicroUsd).toBe(5_000);
  });
});

describe('red team: one corrupted scope in a multi-scope booking', () => {
  for (const [what, corrupt] of [
    ['a state field that is not an integer', (r: Redis, k: string[]) => r.hset(k[0]!, 'res_usd', '1.5')],
    ['a res key of the wrong type', (r: Redis, k: string[]) => r.set(k[1]!, 'x')],
    ['an amt key of the wrong type', (r: Redis, k: string[]) => r.set(k[2]!, 'x')],
    ['an exp key of the wrong type', (r: Redis, k: string[]) => r.set(k[3]!, 'x')],
  ] as const) {
    it(`${what}: the booking fails or books, never half-books the good scope`, async () => {
      const ledger = new SpendLedger({ redis: a, prefix: PREFIX });
      const good = batchScope(`rt-good-${++seq}`);
      const bad = batchScope(`rt-bad-${seq}`);
      await corrupt(a, ledger.keysOf(bad));
      const [booked, other] = await Promise.allSettled([
        ledger.reserve([good, bad], { tokens: 10, costUsd: 0.01 }),
        ledger.reserve([good], { tokens: 1, costUsd: 0.001 }),
      ]);
      expect(other).toMatchObject({ status: 'fulfilled', value: { ok: true } });
      const spend = await ledger.getSpend(good);
      if (booked.status === 'fulfilled') expect(spend.reservedMicroUsd).toBe(11_000);
      else expect(spend).toMatchObject({ reservedMicroUsd: 1_000, liveReservations: 1 });
    });
  }
});
