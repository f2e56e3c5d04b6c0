// The waits of model calls for the fleet's rate limits, on /metrics: the kernel over real HTTP (the scripted
// model server) with the Redis-backed gate, MODEL_TPM's and MODEL_RPM's windows shortened to a second; each wait
// is observed by model and reason, read back from the metrics server as Prometheus scrapes it. And label values
// without a fixed list (tenants, models) are capped: past the first ones seen, they count as `other`.
// Real Redis of REDIS_URL under a key prefix of its own (test-waits-<random>), deleted at the end.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateForJob } from '../../../src/fleet/fleet-gate.js';
import { RateLimiter } from '../../../src/fleet/rate-limiter.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { TokenRateLimiter } from '../../../src/fleet/token-rate-limiter.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import { startMetricsServer, type MetricsServer } from '../../../src/metrics/metrics-server.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { MODEL, runWith } from '../../support/kernel-harness.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-waits-${randomBytes(4).toString('hex')}`;

let redis: Redis;
let server: ScriptedModelServer;
let metricsServer: MetricsServer;
const metrics = new FleetMetrics({ defaultMetrics: false });

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  let id = 0;
  server = await startScriptedModel({
    rules: [() => ({ actions: [{ tool: 'lookup', args: { id: ++id } }] })],
  });
  metricsServer = await startMetricsServer(metrics, { port: 0 });
});

afterAll(async () => {
  await metricsServer?.close();
  await server?.close();
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const scrape = async (): Promise<string> =>
  (await fetch(`http://127.0.0.1:${metricsServer.port}/metrics`)).text();

function sample(page: string, name: string, labels: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A run of 5 steps whose calls go through a gate with these limits, each wait observed as the worker does. */
async function runThrough(limits: { tokens?: TokenRateLimiter; limiter?: RateLimiter }) {
  const gate = gateForJob({
    ledger: new SpendLedger({ redis, prefix: PREFIX }),
    limiter: limits.limiter ?? new RateLimiter({ redis, prefix: `${PREFIX}-pause`, limit: 1 }),
    limitRequests: limits.limiter !== undefined,
    ...(limits.tokens ? { tokens: limits.tokens } : {}),
    onWaited: (reason, ms) => metrics.observeRateWait(MODEL, reason, ms),
  });
  const { result } = await runWith(server, {
    gate,
    budget: { maxSteps: 5, maxCostUsd: 1 },
    options: { completionTokens: 300 },
  });
  expect(result.steps).toBe(5);
}

describe('rate-limit waits on /metrics', () => {
  it('counts the calls that waited for MODEL_TPM, with the seconds they waited', async () => {
    const tokens = new TokenRateLimiter({
      redis,
      prefix: PREFIX,
      model: MODEL,
      limit: 2_000,
      windowMs: 1_000,
    });
    const started = Date.now();
    await runThrough({ tokens });
    const page = await scrape();
    const labels = `model="${MODEL}",reason="tpm"`;
    const waits = sample(page, 'agentfleet_model_call_wait_seconds_count', labels);
    expect(waits).toBeGreaterThan(0);
    const seconds = sample(page, 'agentfleet_model_call_wait_seconds_sum', labels)!;
    expect(seconds).toBeGreaterThan(0);
    expect(seconds * 1000).toBeLessThanOrEqual(Date.now() - started);
    expect(sample(page, 'agentfleet_model_call_wait_seconds_count', `model="${MODEL}",reason="rpm"`)).toBe(
      undefined,
    );
  }, 30_000);

  it('counts the calls that waited for MODEL_RPM', async () => {
    const limiter = new RateLimiter({ redis, prefix: `${PREFIX}-rpm`, limit: 2, windowMs: 1_000 });
    await runThrough({ limiter });
    const page = await scrape();
    // Five calls, two a second: at least the third and the fifth waited.
    expect(
      sample(page, 'agentfleet_model_call_wait_seconds_count', `model="${MODEL}",reason="rpm"`),
    ).toBeGreaterThanOrEqual(2);
  }, 30_000);
});

describe('label values without a fixed list', () => {
  it('keeps the first tenants and models seen, and counts the rest as other', async () => {
    const capped = new FleetMetrics({ defaultMetrics: false, maxLabelValues: 2 });
    for (const tenant of ['acme', 'globex', 'initech', 'umbrella', 'acme']) capped.observeTenantDelay(tenant);
    for (const model of ['m1', 'm2', 'm3']) capped.observeRatePause(model, 'headers');
    const page = await capped.metrics();
    expect(sample(page, 'agentfleet_tenant_delays_total', 'tenant="acme"')).toBe(2);
    expect(sample(page, 'agentfleet_tenant_delays_total', 'tenant="globex"')).toBe(1);
    expect(sample(page, 'agentfleet_tenant_delays_total', 'tenant="other"')).toBe(2);
    expect(page).not.toContain('initech');
    expect(sample(page, 'agentfleet_rate_limit_pauses_total', 'model="other",cause="headers"')).toBe(1);
  });
});
