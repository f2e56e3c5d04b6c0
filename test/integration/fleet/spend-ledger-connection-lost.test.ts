// SpendLedger.connectionLost on a Redis server of the test's own: the calls open when the connection closed are
// settled counted whether or not the server still holds their bookings, once. A booking lost is simulated by
// emptying the server (as a server restarted without persistence loses it; a Sentinel failover's loss is in
// test/integration/faults/sentinel-lost-booking.test.ts).
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';

let server: PrivateRedis;
let redis: Redis;
let seq = 0;
const worst = { tokens: 100, costUsd: 0.01 };
const actual = { tokens: 10, costUsd: 0.001 };

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = createRedis(`redis://127.0.0.1:${server.port}`, 'worker');
});

afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

async function booked(ledger: SpendLedger, scope: string): Promise<string> {
  const booking = await ledger.reserve([scope], worst);
  if (!booking.ok) throw new Error(booking.message);
  return booking.ticket;
}

it('a call whose booking the server lost is counted all the same, once', async () => {
  const ledger = new SpendLedger({ redis, prefix: 'test-lost' });
  const scope = batchScope(`lost-${++seq}`);
  const ticket = await booked(ledger, scope);
  await redis.flushdb();
  ledger.connectionLost();
  expect(await ledger.settle(ticket, actual)).toEqual({ [scope]: 'recorded' });
  // Settled again (a caller's retry): nothing more counted.
  expect(await ledger.settle(ticket, actual)).toEqual({ [scope]: 'none' });
  expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 1_000, reservedMicroUsd: 0 });
});

it('without connectionLost, the same settle counts nothing: what the change is for', async () => {
  const ledger = new SpendLedger({ redis, prefix: 'test-lost' });
  const scope = batchScope(`lost-${++seq}`);
  const ticket = await booked(ledger, scope);
  await redis.flushdb();
  expect(await ledger.settle(ticket, actual)).toEqual({ [scope]: 'none' });
  expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 0 });
});

it('a call whose booking the server kept is settled as usual, counted once', async () => {
  const ledger = new SpendLedger({ redis, prefix: 'test-lost' });
  const scope = batchScope(`kept-${++seq}`);
  const ticket = await booked(ledger, scope);
  ledger.connectionLost();
  expect(await ledger.settle(ticket, actual)).toEqual({ [scope]: 'settled' });
  expect(await ledger.settle(ticket, actual)).toEqual({ [scope]: 'none' });
  expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 1_000, reservedMicroUsd: 0 });
});

it("settled first in the next call's booking: counted apart, once, and the next booking is a plain one", async () => {
  const ledger = new SpendLedger({ redis, prefix: 'test-lost' });
  const scope = batchScope(`first-${++seq}`);
  const lost = await booked(ledger, scope);
  await redis.flushdb();
  ledger.connectionLost();
  const next = await ledger.book([scope], worst, { settleFirst: { ticket: lost, actual } });
  expect(next.settled).toEqual({ [scope]: 'recorded' });
  expect(next.reservation).toMatchObject({ ok: true });
  expect(await ledger.getSpend(scope)).toMatchObject({ usedMicroUsd: 1_000, reservedMicroUsd: 10_000 });
  if (!next.reservation?.ok) throw new Error('refused');
  // Booked after the connection came back: its booking is held, settled plainly.
  await redis.flushdb();
  expect(await ledger.settle(next.reservation.ticket, actual)).toEqual({ [scope]: 'none' });
});
