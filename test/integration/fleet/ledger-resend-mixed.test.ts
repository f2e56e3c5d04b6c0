// A mixed batch of the spend ledger (a settle, a settle folded into a booking, a late settle, a record, a
// refusal) whose reply is lost with the connection: ioredis sends it again on the new one, and every operation
// counts once. Through a proxy that loses one reply, to a Redis server of the test's own.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchScope } from '../../../src/fleet/ledger-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let server: PrivateRedis;
let proxy: TcpProxy;
let redis: Redis;

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
