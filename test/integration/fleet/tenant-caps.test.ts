// A tenant's daily cap through two worker processes running many of its jobs at once: the tenant's day is never
// overspent, its jobs that cannot be covered stop with cost_budget before calling the model, and another
// tenant's jobs are not held back by it.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { microUsdDown, microUsdUp } from '../../../src/fleet/spend-money.js';
import { tenantDayScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

const CAP_USD = 0.3;
let server: ScriptedModelServer;
let ns: FleetNamespace;
let redis: Redis;
const workers: WorkerHandle[] = [];

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel], latencyMs: 40 });
  ns = createNamespace('tenantcaps');
  redis = new Redis(REDIS_URL);
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: server.baseURL,
        AGENT_PROTOCOL: 'json',
        WORKER_CONCURRENCY: '10',
        AGENT_MAX_COST_USD: '1',
        TENANT_DAILY_MAX_COST_USD: String(CAP_USD),
        METRICS_PORT: '0',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/)));
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  redis?.disconnect();
  await ns?.cleanup();
  await server?.close();
});

describe('tenant daily caps', () => {
  it('many concurrent jobs of one tenant on two workers never overspend its day; another tenant goes on', async () => {
    const started = Date.now();
    const acme = await Promise.all(
      Array.from({ length: 30 }, (_, i) => ns.client.enqueue({ task: `job a${i}: 8 steps`, tenant: 'acme' })),
    );
    const globex = await Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        ns.client.enqueue({ task: `job g${i}: 2 steps`, tenant: 'globex' }),
      ),
    );
    const wait = (jobs: { jobId: string }[]) =>
      Promise.all(jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 90_000 })));
    const [acmeResults, globexResults] = (await Promise.all([wait(acme), wait(globex)])) as [
      AgentResult[],
      AgentResult[],
    ];

    const stopped = acmeResults.filter((r) => r.stopReason === 'cost_budget');
    expect(stopped.length).toBeGreaterThan(0);
    // Each says why: what the tenant's day had left, what the call needed, what the other jobs held.
    for (const result of stopped) {
      expect(result.stopDetail).toMatch(
        /The daily cost cap of tenant acme for \d{4}-\d{2}-\d{2} cannot cover this call: \$[\d.]+ of \$0\.30 left, the call needs up to \$[\d.]+ \(\$[\d.]+ spent, \$[\d.]+ reserved by other calls in flight at that moment\)/,
      );
    }
    for (const result of acmeResults) expect(['succeeded', 'stopped']).toContain(result.status);
    for (const result of globexResults) expect(result).toMatchObject({ status: 'succeeded' });

    // The tenant's day, as the ledger holds it (two days if the test straddles midnight), never above the cap.
    const ledger = new SpendLedger({ redis, prefix: ns.prefix, tenantDailyCaps: { maxCostUsd: CAP_USD } });
    let usedMicroUsd = 0;
    for (const scope of new Set([started, Date.now()].map((t) => tenantDayScope('acme', t)))) {
      const spend = await ledger.getSpend(scope);
      expect(spend).toMatchObject({ reservedMicroUsd: 0, liveReservations: 0 });
      usedMicroUsd += spend.usedMicroUsd;
    }
    expect(usedMicroUsd).toBeLessThanOrEqual(microUsdDown(CAP_USD));
    // And the results agree with it, each call rounded up to a micro-dollar.
    const billed = acmeResults.reduce((sum, r) => sum + r.usage.costUsd, 0);
    expect(microUsdUp(billed)).toBeLessThanOrEqual(microUsdDown(CAP_USD));
    expect(usedMicroUsd).toBeGreaterThanOrEqual(microUsdUp(billed) - acmeResults.length);
    // Stored like any other run.
    const rows = await queryStore<{ n: number }>(
      ns,
      "SELECT COUNT(*) AS n FROM agent_runs WHERE stop_reason = 'cost_budget'",
    );
    expect(Number(rows[0]?.n)).toBe(stopped.length);
  }, 120_000);
});
