// The spend ledger when a script ran but its reply was lost (the connection dropped in between): ioredis sends
// the unanswered commands again on the new connection, so the same script, with the same tickets, runs twice.
// Through a proxy that loses one reply, to a Redis server of the test's own.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const PREFIX = 'test-ledger-resend';
let server: PrivateRedis;
let proxy: TcpProxy;
/** The worker's connection (never gives up on a command), through the proxy. */
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await startPrivateRedis();
  proxy = await startTcpProxy(server.port);
  redis = createRedis(`redis://127.0.0.1:${proxy.port}`, 'worker');
  redis.on('error', () => undefined);
});

afterAll(async () => {
  redis?.disconnect();
  await proxy?.close();
  await server?.close();
});

const worst = { tokens: 100, costUsd: 0.01 };

describe('a ledger script that ran but whose reply was lost', () => {
  let ledger: SpendLedger;
  beforeEach(async () => {
    ledger = new SpendLedger({ redis, prefix: PREFIX });
    await ledger.getSpend(batchScope('warm')); // connected, and nothing else in flight
  });

  it('bookings of one script, sent again, are the same bookings: not refused by their own reservations', async () => {
    const scope = batchScope(`resend-${++seq}`);
    // Room for exactly the two bookings.
    await ledger.setCaps(scope, { maxCostUsd: 0.02 });
    const nothing = { tokens: 0, costUsd: 0 };
    // The batch's script is loaded (a reply lost to NOSCRIPT would only be sent again as is).
    await Promise.all([ledger.reserve([scope], nothing), ledger.reserve([scope], nothing)]);
    proxy.loseNextReply();
    const [a, b] = await Promise.all([ledger.reserve([scope], worst), ledger.reserve([scope], worst)]);
    expect(a).toMatchObject({ ok: true });
    expect(b).toMatchObject({ ok: true });
    expect(await ledger.getSpend(scope)).toMatchObject({ reservedMicroUsd: 20_000, liveReservations: 4 });
    if (!a.ok || !b.ok) throw new Error('refused');
    await Promise.all([ledger.settle(a.ticket, worst), ledger.settle(b.ticket, worst)]);
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 20_000, reservedMicroUsd: 0 });
  });

  it('a lone booking sent again is the same booking, not a duplicate ticket', async () => {
    const scope = batchScope(`resend-lone-${++seq}`);
    await ledger.reserve([batchScope('warm')], { tokens: 0, costUsd: 0 }); // the script is loaded
    proxy.loseNextReply();
    const booked = await ledger.reserve([scope], worst);
    expect(booked).toMatchObject({ ok: true });
    expect(await ledger.getSpend(scope)).toMatchObject({ reservedMicroUsd: 10_000, liveReservations: 1 });
  });

  it('a settle that records a call whose booking failed, sent again, records it once', async () => {
    const scope = batchScope(`resend-record-${++seq}`);
    // A ticket the ledger never held (its booking failed), and one it holds.
    const inFlight = ledger.bookInFlight([scope], worst);
    await inFlight.booking;
    await redis.del(...ledger.keysOf(scope));
    const unbooked = inFlight.ticket;
    const held = await ledger.reserve([scope], worst);
    if (!held.ok) throw new Error(held.message);
    await ledger.settleOrRecord(held.ticket, { tokens: 0, costUsd: 0 }); // the scripts are loaded
    const booked = await ledger.reserve([scope], worst);
    if (!booked.ok) throw new Error(booked.message);
    const before = (await ledger.getSpend(scope)).usedMicroUsd;

    proxy.loseNextReply();
    expect(await ledger.settleOrRecord(booked.ticket, { tokens: 1, costUsd: 0.003 })).toEqual({
      [scope]: 'settled',
    });
    proxy.loseNextReply();
    expect(await ledger.settleOrRecord(unbooked, { tokens: 1, costUsd: 0.004 })).toEqual({
      [scope]: 'recorded',
    });
    expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: before + 7_000, reservedMicroUsd: 0 });
  });
});

// A mixed batch (a settle, a settle folded into a booking, a late settle, a record, a refusal, a malformed
// ticket) whose reply is lost: sent again on the new connection, every operation counts once.
it('a mixed batch sent again after its reply was lost counts each of its operations once', async () => {
  let now = Date.parse('2032-03-01T10:00:00Z');
  const ledger = new SpendLedger({ redis, prefix: 'rt-resend', now: () => now, reservationTtlMs: 1_000 });
  const scopes = [batchScope('rt-a'), batchScope('rt-b')];
  const other = batchScope('rt-other');
  await ledger.setCaps(scopes[1]!, { maxCostUsd: 0.05 });
  const expired = await ledger.reserve(scopes, worst);
  now += 2_000;
  const [held, folded] = await Promise.all([ledger.reserve(scopes, worst), ledger.reserve(scopes, worst)]);
  if (!expired.ok || !held.ok || !folded.ok) throw new Error('not booked');
  const unbooked = ledger.bookInFlight([other], worst).ticket;
  await redis.del(...ledger.keysOf(other)); // as if that booking never ran
  await Promise.all([ledger.getSpend(other), ledger.getSpend(other)]); // the batch's script is loaded

  await redis.config('RESETSTAT');
  proxy.loseNextReply();
  const outcomes = await Promise.allSettled([
    ledger.settle(held.ticket, { tokens: 3, costUsd: 0.002 }),
    ledger.book(scopes, worst, {
      settleFirst: { ticket: folded.ticket, actual: { tokens: 4, costUsd: 0.003 } },
    }),
    ledger.settle(expired.ticket, { tokens: 5, costUsd: 0.004 }),
    ledger.settleOrRecord(unbooked, { tokens: 6, costUsd: 0.005 }),
    ledger.reserve(scopes, { tokens: 1, costUsd: 0.5 }),
    ledger.settle('v1.not-a-ticket', worst),
  ]);
  expect(outcomes.map((o) => o.status)).toEqual([
    'fulfilled',
    'fulfilled',
    'fulfilled',
    'fulfilled',
    'fulfilled',
    'rejected',
  ]);
  // The batch ran twice: once before its reply was lost, once sent again (then INFO itself).
  expect(await redis.info('commandstats')).toMatch(/^cmdstat_evalsha:calls=2,/m);
  expect(outcomes[4]).toMatchObject({ value: { ok: false, reason: 'cost_budget' } });
  for (const scope of scopes) {
    expect(await ledger.getSpend(scope)).toMatchObject({
      usedMicroUsd: 2_000 + 3_000 + 4_000,
      reservedMicroUsd: 10_000,
      liveReservations: 1,
    });
  }
  expect(await ledger.getSpend(other)).toMatchObject({ usedMicroUsd: 5_000, reservedMicroUsd: 0 });
});
