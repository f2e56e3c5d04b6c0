// A parent's holds for its child agents in the real spend ledger (Redis of REDIS_URL, a key prefix of its own):
// taken in the parent's scopes, the same hold when taken again, capped for the child's calls, nested for a
// grandchild, counted as spent at its worst case when it expires unsettled, corrected by a late settle.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ChildHolds, holdIdOf } from '../../../src/fleet/child-holds.js';
import { jobScopes } from '../../../src/fleet/fleet-gate.js';
import { batchScope, holdScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { decodeTicket } from '../../../src/fleet/spend-tickets.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-holds-${randomBytes(4).toString('hex')}`;
let redis: Redis;
let clock = Date.now();
let ledger: SpendLedger;
let holds: ChildHolds;
let seq = 0;
const freshBatch = () => `holds-${++seq}`;

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  ledger = new SpendLedger({ redis, prefix: PREFIX, now: () => clock });
  holds = new ChildHolds(ledger, () => clock);
});

afterAll(async () => {
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

it("a hold is the child's whole budget in the parent's scopes, once however often it is taken", async () => {
  const batchId = freshBatch();
  await ledger.setCaps(batchScope(batchId), { maxCostUsd: 1 });
  const budget = { maxTokens: 10_000, maxCostUsd: 0.25 };
  const first = await holds.take({ batchId }, 'child-a', budget, clock + 60_000);
  const again = await holds.take({ batchId }, 'child-a', budget, clock + 60_000);
  expect(first).toEqual(again);
  expect(first.ok && decodeTicket(first.ticket).id).toBe(holdIdOf('child-a'));
  const spend = await ledger.getSpend(batchScope(batchId));
  expect(spend).toMatchObject({ reservedMicroUsd: 250_000, reservedTokens: 10_000, liveReservations: 1 });
  // The child's calls book in its hold alone, uncapped: the child's kernel holds it to its budget, and a capped
  // scope would make each of its calls wait for its booking.
  const hold = await ledger.getSpend(holdScope(holdIdOf('child-a')));
  expect(hold).toMatchObject({ capMicroUsd: null, capTokens: null });
  expect(jobScopes({ batchId, tenant: 'acme', hold: first.ok ? first.ticket : '' })(clock)).toEqual([
    holdScope(holdIdOf('child-a')),
  ]);
});

it('a hold the batch cannot cover is refused, naming the batch; the child then books call by call', async () => {
  const batchId = freshBatch();
  await ledger.setCaps(batchScope(batchId), { maxCostUsd: 0.1 });
  const held = await holds.take(
    { batchId },
    'child-b',
    { maxTokens: 1_000, maxCostUsd: 0.2 },
    clock + 60_000,
  );
  expect(held).toMatchObject({ ok: false, message: expect.stringMatching(/batch .* cannot cover/) });
  expect((await ledger.getSpend(batchScope(batchId))).reservedMicroUsd).toBe(0);
});

it("a grandchild's hold is taken in its parent's hold, and the tree settles into the batch once", async () => {
  const batchId = freshBatch();
  const child = await holds.take(
    { batchId },
    'child-c',
    { maxTokens: 5_000, maxCostUsd: 0.1 },
    clock + 60_000,
  );
  if (!child.ok) throw new Error(child.message);
  // The child spends in its hold, then sets aside a grandchild's share (carved by its kernel from what it has left).
  const call = await ledger.reserve(jobScopes({ hold: child.ticket })(clock), {
    tokens: 1_000,
    costUsd: 0.03,
  });
  if (!call.ok) throw new Error(call.message);
  await ledger.settle(call.ticket, { tokens: 800, costUsd: 0.02 });
  const grand = await holds.take(
    { hold: child.ticket },
    'grand-y',
    { maxTokens: 1_000, maxCostUsd: 0.05 },
    clock,
  );
  if (!grand.ok) throw new Error(grand.message);
  await holds.release(grand.ticket, { totalTokens: 300, costUsd: 0.01 });
  await holds.release(child.ticket, { totalTokens: 1_100, costUsd: 0.03 });
  // Settling again changes nothing.
  await holds.release(child.ticket, { totalTokens: 9_999, costUsd: 0.09 });
  expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
    usedMicroUsd: 30_000,
    usedTokens: 1_100,
    reservedMicroUsd: 0,
  });
});

it('an unsettled hold expires as spent at its worst case, and a late settle corrects it', async () => {
  const batchId = freshBatch();
  const held = await holds.take(
    { batchId },
    'child-d',
    { maxTokens: 2_000, maxCostUsd: 0.05 },
    clock + 1_000,
  );
  if (!held.ok) throw new Error(held.message);
  clock += 1_000 + 10 * 60_000 + 1;
  expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
    usedMicroUsd: 50_000,
    reservedMicroUsd: 0,
  });
  await holds.release(held.ticket, { totalTokens: 500, costUsd: 0.004 });
  expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({ usedMicroUsd: 4_000, usedTokens: 500 });
});

it("a child attempt's calls lost in a crash still count: the hold settles at what its scope saw, if more", async () => {
  const batchId = freshBatch();
  const held = await holds.take(
    { batchId },
    'child-e',
    { maxTokens: 5_000, maxCostUsd: 0.1 },
    clock + 60_000,
  );
  if (!held.ok) throw new Error(held.message);
  const scopes = jobScopes({ hold: held.ticket })(clock);
  // The first attempt's call is booked, and its worker dies before settling it or checkpointing.
  const lost = await ledger.reserve(scopes, { tokens: 1_000, costUsd: 0.02 });
  expect(lost.ok).toBe(true);
  // The resumed attempt's call, settled; the result's usage knows only it.
  const kept = await ledger.reserve(scopes, { tokens: 1_000, costUsd: 0.02 });
  if (!kept.ok) throw new Error(kept.message);
  await ledger.settle(kept.ticket, { tokens: 400, costUsd: 0.005 });
  await holds.release(held.ticket, { totalTokens: 400, costUsd: 0.005 });
  expect(await ledger.getSpend(batchScope(batchId))).toMatchObject({
    usedMicroUsd: 25_000,
    usedTokens: 1_400,
    reservedMicroUsd: 0,
  });
});
