// The kernel with the Redis-backed fleet gate: runs of one batch on separate Redis connections share the batch
// budget and never overspend it; a ledger that does not answer fails the run retryably instead of hanging it.
// Real Redis of REDIS_URL under a key prefix of its own (test-gate-<random>), deleted at the end.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateForJob } from '../../../src/fleet/fleet-gate.js';
import { microUsdUp } from '../../../src/fleet/spend-money.js';
import { batchScope, dayScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-gate-${randomBytes(4).toString('hex')}`;

let server: ScriptedModelServer;
let redis: Redis;

beforeAll(async () => {
  server = await startScriptedModel();
  redis = createRedis(REDIS_URL, 'producer');
});

afterAll(async () => {
  await server?.close();
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const lookups = () => {
  let id = 0;
  return () => ({ actions: [{ tool: 'lookup', args: { id: ++id } }] });
};

describe('fleet gate in the kernel', () => {
  it('concurrent runs of one batch stop with cost_budget and never overspend the batch budget', async () => {
    const RUNS = 4;
    const CAP = 0.05;
    const batchId = `gate-${randomBytes(3).toString('hex')}`;
    const connections = Array.from({ length: RUNS }, () => createRedis(REDIS_URL, 'producer'));
    try {
      await new SpendLedger({ redis, prefix: PREFIX }).setCaps(batchScope(batchId), { maxCostUsd: CAP });
      server.reset({ rules: [lookups()] });
      const before = server.requests.length;
      const started = Date.now();
      const runs = await Promise.all(
        connections.map((connection) => {
          const ledger = new SpendLedger({ redis: connection, prefix: PREFIX });
          return runWith(server, {
            gate: gateForJob({ ledger, batchId }),
            budget: { maxCostUsd: 1, maxSteps: 50 },
          });
        }),
      );
      for (const { result } of runs)
        expect(result).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
      const spend = await new SpendLedger({ redis, prefix: PREFIX }).getSpend(batchScope(batchId));
      expect(spend).toMatchObject({ reservedMicroUsd: 0, liveReservations: 0 });
      expect(spend.usedUsd).toBeLessThanOrEqual(CAP);
      // Every call was booked and settled: the ledger holds the runs' usage, each call rounded up to a micro-dollar.
      const calls = server.requests.length - before;
      const usage = runs.reduce((sum, { result }) => sum + result.usage.costUsd, 0);
      expect(spend.usedMicroUsd).toBeGreaterThanOrEqual(microUsdUp(usage) - RUNS);
      expect(spend.usedMicroUsd).toBeLessThanOrEqual(microUsdUp(usage) + calls);
      // Each call was also booked in its UTC day (two days if the test straddles midnight).
      const ledger = new SpendLedger({ redis, prefix: PREFIX });
      let dayMicroUsd = 0;
      for (const day of new Set([dayScope(started), dayScope(Date.now())])) {
        dayMicroUsd += (await ledger.getSpend(day)).usedMicroUsd;
      }
      expect(dayMicroUsd).toBe(spend.usedMicroUsd);
    } finally {
      connections.forEach((c) => c.disconnect());
    }
  });

  it('a ledger that does not answer ends the run with a retryable gate_unavailable error', async () => {
    // Nothing listens on port 1: a worker connection queues its commands and never gives up on them.
    const down = new Redis('redis://127.0.0.1:1', { maxRetriesPerRequest: null, retryStrategy: () => 200 });
    down.on('error', () => undefined);
    try {
      server.reset({ script: [] });
      const before = server.requests.length;
      const gate = gateForJob({
        ledger: new SpendLedger({ redis: down, prefix: PREFIX }),
        batchId: 'unreachable',
        ledgerTimeoutMs: 300,
      });
      const started = Date.now();
      const { result } = await runWith(server, { gate });
      expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
      expect(result.error).toMatchObject({ kind: 'system', code: 'gate_unavailable', retryable: true });
      expect(result.error?.message).toContain('did not answer within 300 ms');
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(server.requests.length).toBe(before);
    } finally {
      down.disconnect();
    }
  });
});
