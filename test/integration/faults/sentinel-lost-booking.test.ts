// Fault suite, spend a Sentinel failover could hide: 40 callers book a model call's worst case in the spend ledger,
// take a second or so, and settle its actual, on the fleet's Sentinel connection, while SENTINEL FAILOVER runs.
// The old master takes some bookings after its replica was promoted, and the new master does not have them; their
// settles come after the connection moved, so the ledger settles them counted whatever the server holds
// (SpendLedger.connectionLost, called on the connection's close as the worker calls it). At the end the ledger
// has counted every actual, as used or, for a settle the old master took in that moment, as a reservation that
// expires as spent: no budget passed. No settle found nothing to settle (`none`: a call the ledger never counts),
// and nothing counts twice: what it counts as used is at most what was spent.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis, type RedisClient } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { printFigures } from '../../support/fault-figures.js';
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const prefix = `test-booking-${randomBytes(4).toString('hex')}`;
const CALLERS = 40;
const ACTUAL_MICRO_USD = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let sentinel: LocalSentinel;
let redis: RedisClient;

setupOrFail(async () => {
  sentinel = await startLocalSentinel();
  redis = createRedis(redisTarget({ sentinels: sentinel.sentinels, sentinelName: sentinel.name }), 'worker');
});

afterAll(async () => {
  if (redis) {
    await deleteKeysWithPrefix(redis, prefix).catch(() => undefined);
    redis.disconnect();
  }
  await sentinel?.close();
});

it('every call booked across the failover is counted once: as used, or reserved until it expires as spent', async () => {
  const ledger = new SpendLedger({ redis, prefix });
  redis.on('close', () => ledger.connectionLost());
  const scope = batchScope(`b-${randomBytes(4).toString('hex')}`);
  await redis.ping();
  let calling = true;
  let settled = 0;
  const statuses: Record<string, number> = {};
  const caller = async (i: number) => {
    await sleep(i * 30);
    while (calling) {
      const booking = await ledger.reserve([scope], { tokens: 1_000, costUsd: 0.01 });
      if (!booking.ok) throw new Error(booking.message);
      // A model call of 1 to 1.5 s: longer than the moment the old master takes writes after the promotion.
      await sleep(1_000 + ((i * 37) % 500));
      const status = await ledger.settle(booking.ticket, { tokens: 10, costUsd: ACTUAL_MICRO_USD / 1e6 });
      statuses[status[scope]!] = (statuses[status[scope]!] ?? 0) + 1;
      settled++;
    }
  };
  const callers = Array.from({ length: CALLERS }, (_, i) => caller(i));
  await sleep(2_000);
  const newMaster = await sentinel.failover();
  await sleep(3_000);
  calling = false;
  await Promise.all(callers);

  const spend = await ledger.getSpend(scope);
  printFigures('sentinel-lost-booking', {
    settled,
    usedMicroUsd: spend.usedMicroUsd,
    reservedMicroUsd: spend.reservedMicroUsd,
    liveReservations: spend.liveReservations,
    settledAs: JSON.stringify(statuses),
  });
  expect(newMaster).toBe(sentinel.replicaPort);
  // A settle that found no booking and counted nothing ('none') is a call the budget never saw.
  expect(statuses['none'] ?? 0).toBe(0);
  const spent = settled * ACTUAL_MICRO_USD;
  expect(spend.usedMicroUsd + spend.reservedMicroUsd).toBeGreaterThanOrEqual(spent);
  expect(spend.usedMicroUsd).toBeLessThanOrEqual(spent);
}, 90_000);
