// The spend ledger's bookings and settles of one turn of the event loop leave as one script: counted with INFO
// commandstats on a Redis server of the test's own (so no other client counts), through the real fleet gate.
// Each operation of a batch keeps its own answer, its own failure and its place in the order.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateForJob } from '../../../src/fleet/fleet-gate.js';
import { LedgerOperationError, MAX_OPERATIONS_PER_SCRIPT } from '../../../src/fleet/spend-batch.js';
import { batchScope, dayScope, tenantDayScope } from '../../../src/fleet/spend-scopes.js';
import { LuaScript } from '../../../src/fleet/lua-script.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';

const PREFIX = 'test-spend-batch';
let server: PrivateRedis;
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

/** Scripts run since the last RESETSTAT (a NOSCRIPT fallback counts twice, as it costs two commands). */
async function scriptsRun(): Promise<number> {
  const text = await redis.info('commandstats');
  return [...text.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[2]), 0);
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const ms = (n: number) => new Promise((resolve) => setTimeout(resolve, n));
const signal = new AbortController().signal;
const worst = { tokens: 100, costUsd: 0.01 };

describe('one script per turn', () => {
  it('twenty jobs of five steps through the real gate: their bookings and settles cost two scripts a round', async () => {
    const JOBS = 20;
    const STEPS = 5;
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const batchId = `round-${++seq}`;
    // A budget: every booking is waited for, and the ledger could refuse any of them.
    await ledger.setCaps(batchScope(batchId), { maxCostUsd: 100 });
    const gates = Array.from({ length: JOBS }, (_, job) =>
      gateForJob({ ledger, batchId, tenant: `t${job % 3}` }),
    );
    const signals = gates.map(() => new AbortController().signal);
    // Warm: the scripts' first use loads them.
    await Promise.all(gates.slice(0, 2).map((gate) => gate.acquire(worst, signal))).then((decisions) =>
      Promise.all(
        decisions.map((d, i) => (d.ok ? gates[i]?.release(d.ticket, { tokens: 0, costUsd: 0 }) : 0)),
      ),
    );
    await redis.config('RESETSTAT');

    let spentMicroUsd = 0;
    const settles: Promise<void>[] = [];
    for (let step = 1; step <= STEPS; step++) {
      const decisions = await Promise.all(gates.map((gate, job) => gate.acquire(worst, signals[job]!)));
      await ms(5); // the model calls
      decisions.forEach((decision, job) => {
        if (!decision.ok) throw new Error(decision.message);
        const actual = { tokens: step + job, costUsd: (step + job) / 1_000_000 };
        spentMicroUsd += step + job;
        settles.push(gates[job]!.release(decision.ticket, actual));
      });
      await ms(5); // the tools, which did I/O: each settle leaves at the end of its turn
    }
    await Promise.all(settles);
    // 200 bookings and settles alone would be 200 scripts (100 with every settle folded into a booking). At most
    // two a round: fewer when a slow machine lets a round's settles leave with the next round's bookings.
    expect(await scriptsRun()).toBeLessThanOrEqual(2 * STEPS);

    const spend = await ledger.getSpend(batchScope(batchId));
    expect(spend).toMatchObject({ usedMicroUsd: spentMicroUsd, reservedMicroUsd: 0, liveReservations: 0 });
    const tenants = await Promise.all(
      [0, 1, 2].map((t) => ledger.getSpend(tenantDayScope(`t${t}`, Date.now()))),
    );
    expect(tenants.reduce((sum, t) => sum + t.usedMicroUsd, 0)).toBe(spentMicroUsd);
  });

  it(`a turn with more than ${MAX_OPERATIONS_PER_SCRIPT} operations is split into scripts of at most that many`, async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`split-${++seq}`);
    await ledger.reserve([scope], worst); // warm
    await redis.config('RESETSTAT');
    const bookings = await Promise.all(
      Array.from({ length: MAX_OPERATIONS_PER_SCRIPT + 1 }, () => ledger.reserve([scope], worst)),
    );
    expect(bookings.every((b) => b.ok)).toBe(true);
    expect(await scriptsRun()).toBe(2); // 64 in one, the last in a second
    expect(await ledger.getSpend(scope)).toMatchObject({ liveReservations: MAX_OPERATIONS_PER_SCRIPT + 2 });
  });
});

describe('an operation of a batch behaves as if sent alone', () => {
  it(`the order holds across the split at ${MAX_OPERATIONS_PER_SCRIPT} when the server has lost the batch's script`, async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`split-order-${++seq}`);
    await ledger.setCaps(scope, { maxCostUsd: 0.015 });
    // A lone booking's script is known to the server, the batch's not (a new version deployed, or a flush).
    await redis.script('FLUSH');
    await ledger.reserve([batchScope(`other-${seq}`)], worst);
    const bookings = await Promise.all(
      Array.from({ length: MAX_OPERATIONS_PER_SCRIPT + 1 }, () => ledger.reserve([scope], worst)),
    );
    // Room for one: the first asked for gets it, not the last.
    expect(bookings.map((b) => b.ok).indexOf(true)).toBe(0);
    expect(bookings.filter((b) => b.ok)).toHaveLength(1);
  });

  it("the order holds across turns when the server knows a lone booking's script and not the batch's", async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`turn-order-${++seq}`);
    await ledger.setCaps(scope, { maxCostUsd: 0.01 });
    const held = await ledger.reserve([scope], worst);
    if (!held.ok) throw new Error(held.message);
    // The server knows a lone booking's script (as another process loaded it), not the batch's.
    await redis.script('FLUSH');
    const lone = LuaScript.calling(
      'return reserve(KEYS, ARGV)',
      new URL('../../../src/fleet/spend-common.lua', import.meta.url),
      new URL('../../../src/fleet/spend-reserve.lua', import.meta.url),
    );
    await redis.script('LOAD', lone.source);
    // The server busy for a moment (another client's script), so both turns below reach it before it answers.
    const busy = new Redis(server.url);
    const busyScript = `local t = redis.call('TIME')[1] * 1e6 + redis.call('TIME')[2]
      while redis.call('TIME')[1] * 1e6 + redis.call('TIME')[2] < t + 150000 do end`;
    const busied = busy.eval(busyScript, 0);
    await ms(20);
    // A turn of two (a batch, sent again as EVAL after its NOSCRIPT), then a booking alone in the next turn.
    const settled = ledger.settle(held.ticket, { tokens: 0, costUsd: 0 });
    const other = ledger.reserve([batchScope(`other-${seq}`)], worst);
    await turn();
    const next = ledger.reserve([scope], worst);
    await Promise.all([settled, other, busied]);
    busy.disconnect();
    // Asked for after the settle, the booking sees the room it freed.
    expect(await next).toMatchObject({ ok: true });
  });

  it('in the order asked for: a settle before a booking frees its room, after it does not', async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`order-${++seq}`);
    await ledger.setCaps(scope, { maxCostUsd: 0.015 });
    const held = await ledger.reserve([scope], worst);
    if (!held.ok) throw new Error(held.message);

    // Same turn, booking first: the 0.01 held leaves no room for another 0.01 under 0.015.
    const [refused] = await Promise.all([
      ledger.reserve([scope], worst),
      ledger.settle(held.ticket, { tokens: 10, costUsd: 0.001 }),
    ]);
    expect(refused).toMatchObject({ ok: false, reason: 'cost_budget' });
    // The refusal's figures are those of that moment: the 0.01 reserved by the other call, nothing spent yet.
    if (refused.ok) throw new Error('booked');
    expect(refused.detail).toMatchObject({ spent: 0, reservedByOthers: 10_000, needed: 10_000, cap: 15_000 });

    const again = await ledger.reserve([scope], worst);
    if (!again.ok) throw new Error(again.message);
    // Same turn, settle first: the booking sees the room it freed.
    const [, booked] = await Promise.all([
      ledger.settle(again.ticket, { tokens: 10, costUsd: 0.001 }),
      ledger.reserve([scope], worst),
    ]);
    expect(booked.ok).toBe(true);
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 2_000, reservedMicroUsd: 10_000 });
  });

  it('a settle whose day has ended still goes before the next booking of its turn, in the batch it shares', async () => {
    let now = Date.parse('2026-05-01T23:59:59Z');
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const batchId = `midnight-${++seq}`;
    // Room for one worst case: the next call fits only once the last one's settle has freed its room.
    await ledger.setCaps(batchScope(batchId), { maxCostUsd: 0.015 });
    const gate = gateForJob({ ledger, batchId, now: () => now });
    const first = await gate.acquire(worst, signal);
    if (!first.ok) throw new Error(first.message);
    // A step whose tools did no I/O, across midnight: the settle cannot ride with the next booking (the day
    // scope differs), and the batch scope they share must see it first.
    const released = gate.release(first.ticket, { tokens: 10, costUsd: 0.001 });
    now += 2_000;
    const next = await gate.acquire(worst, signal);
    await released;
    expect(next).toMatchObject({ ok: true });
    expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
      usedMicroUsd: 1_000,
      reservedMicroUsd: 10_000,
    });
  });

  it('two bookings of one turn against a cap that covers one: the first gets it, the second is refused', async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const scope = batchScope(`race-${++seq}`);
    await ledger.setCaps(scope, { maxCostUsd: 0.015 });
    const [first, second] = await Promise.all([
      ledger.reserve([scope], worst),
      ledger.reserve([scope], worst),
    ]);
    expect(first.ok).toBe(true);
    expect(second).toMatchObject({ ok: false, reason: 'cost_budget', detail: { reservedByOthers: 10_000 } });
  });

  it('an operation that fails in the script fails alone; the others of its turn are done', async () => {
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    const broken = batchScope(`broken-${++seq}`);
    const fine = batchScope(`fine-${seq}`);
    const held = await ledger.reserve([fine], worst);
    if (!held.ok) throw new Error(held.message);
    // A key of the wrong type: the booking's script meets WRONGTYPE half-way.
    const [state] = ledger.keysOf(broken);
    await redis.set(state!, 'not a hash');
    await redis.config('RESETSTAT');
    const [lost, booked, settled] = await Promise.allSettled([
      ledger.reserve([broken], worst),
      ledger.reserve([fine], worst),
      ledger.settle(held.ticket, { tokens: 5, costUsd: 0.002 }),
    ]);
    expect(await scriptsRun()).toBe(1);
    expect(lost.status).toBe('rejected');
    if (lost.status === 'rejected') {
      expect(lost.reason).toBeInstanceOf(LedgerOperationError);
      expect(String(lost.reason)).toMatch(/WRONGTYPE/);
    }
    expect(booked).toMatchObject({ status: 'fulfilled', value: { ok: true } });
    expect(settled).toMatchObject({ status: 'fulfilled', value: { [fine]: 'settled' } });
    expect(await ledger.getSpend(fine)).toMatchObject({ usedMicroUsd: 2_000, liveReservations: 1 });
  });

  it('a batch Redis refuses as a whole fails every operation of it', async () => {
    const dead = new Redis({
      port: 1,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    try {
      const ledger = new SpendLedger({ redis: dead, prefix: PREFIX });
      const scope = dayScope(Date.now());
      const outcomes = await Promise.allSettled([
        ledger.reserve([scope], worst),
        ledger.reserve([scope], worst),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    } finally {
      dead.disconnect();
    }
  });

  it('a crashed worker’s bookings of one script expire one by one as spent, and a late settle corrects each', async () => {
    let now = Date.parse('2026-05-01T10:00:00Z');
    const ledger = new SpendLedger({ redis, prefix: PREFIX, now: () => now, reservationTtlMs: 1_000 });
    const scope = batchScope(`expiry-${++seq}`);
    const [a, b] = await Promise.all([ledger.reserve([scope], worst), ledger.reserve([scope], worst)]);
    if (!a.ok || !b.ok) throw new Error('not booked');
    now += 2_000;
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 20_000, liveReservations: 0 });
    await turn();
    const [late] = await Promise.all([
      ledger.settle(a.ticket, { tokens: 1, costUsd: 0.001 }),
      ledger.settle(b.ticket, { tokens: 1, costUsd: 0.003 }),
    ]);
    expect(late).toEqual({ [scope]: 'late' });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 4_000, reservedMicroUsd: 0 });
  });
});
