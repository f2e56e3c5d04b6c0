// The fleet's limits in tokens and per tenant, with the kernel over real HTTP (the scripted model server) and the
// Redis-backed gate, each "worker" on a Redis connection (and limiter) of its own as separate processes are:
// MODEL_TPM across workers never exceeds its window; the endpoint's x-ratelimit-* headers slow the fleet before
// a 429; a tenant's daily cap is never overspent by many concurrent jobs on two workers; and a refusal says what
// was left, what the call needed and what other calls held reserved.
// Real Redis of REDIS_URL under a key prefix of its own (test-limits-<random>), deleted at the end.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateForJob } from '../../../src/fleet/fleet-gate.js';
import { withProviderRateLimits } from '../../../src/fleet/provider-rate-limits.js';
import { RateLimiter } from '../../../src/fleet/rate-limiter.js';
import { microUsdDown, microUsdUp } from '../../../src/fleet/spend-money.js';
import { batchScope, dayScope, tenantDayScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { TokenRateLimiter } from '../../../src/fleet/token-rate-limiter.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import { createRedis } from '../../../src/queue/redis.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { MODEL, runWith } from '../../support/kernel-harness.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-limits-${randomBytes(4).toString('hex')}`;

let redis: Redis;
const connections: Redis[] = [];
const servers: ScriptedModelServer[] = [];

/** A Redis connection of its own, as a worker process has. */
function workerConnection(): Redis {
  const connection = createRedis(REDIS_URL, 'producer');
  connections.push(connection);
  return connection;
}

async function scriptedServer(options: Parameters<typeof startScriptedModel>[0] = {}) {
  const server = await startScriptedModel(options);
  servers.push(server);
  return server;
}

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  connections.forEach((c) => c.disconnect());
  if (!redis) return;
  const keys = await redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const lookups = () => {
  let id = 0;
  return () => ({ actions: [{ tool: 'lookup', args: { id: ++id } }] });
};

/** The most tokens the server saw in any window of `windowMs` (by arrival), from its own accounting. */
function busiestWindow(server: ScriptedModelServer, windowMs: number): number {
  const calls = server.requests
    .filter((r) => r.usage)
    .map((r) => ({ at: r.receivedAt, tokens: r.usage!.promptTokens + r.usage!.completionTokens }));
  let busiest = 0;
  for (const end of calls) {
    const inWindow = calls.filter((c) => c.at <= end.at && c.at > end.at - windowMs);
    busiest = Math.max(
      busiest,
      inWindow.reduce((sum, c) => sum + c.tokens, 0),
    );
  }
  return busiest;
}

describe('MODEL_TPM', () => {
  it('across two workers, no window ever holds more tokens than the limit; calls wait instead', async () => {
    const WINDOW_MS = 1_500;
    const LIMIT = 4_000;
    const server = await scriptedServer({ rules: [lookups()] });
    const model = `tpm-${randomBytes(3).toString('hex')}`;
    const started = Date.now();
    // Two workers, two runs each, every run as many steps as it can in its budget.
    const runs = await Promise.all(
      [0, 1].flatMap(() => {
        const connection = workerConnection();
        const ledger = new SpendLedger({ redis: connection, prefix: PREFIX });
        const tokens = new TokenRateLimiter({
          redis: connection,
          prefix: PREFIX,
          model,
          limit: LIMIT,
          windowMs: WINDOW_MS,
        });
        return [0, 1].map(() =>
          runWith(server, {
            gate: gateForJob({ ledger, tokens }),
            budget: { maxSteps: 6, maxCostUsd: 1 },
            options: { completionTokens: 300 },
          }),
        );
      }),
    );
    const elapsed = Date.now() - started;
    for (const { result } of runs) expect(result.status).not.toBe('failed');
    const total = runs.reduce((sum, { result }) => sum + result.usage.totalTokens, 0);
    // The limit bound: more tokens were used than one window allows, so calls had to wait for the window.
    expect(total).toBeGreaterThan(LIMIT);
    expect(elapsed).toBeGreaterThan(WINDOW_MS);
    // A few ms of slack for the hop from the grant (Redis clock) to the server's arrival time.
    expect(busiestWindow(server, WINDOW_MS - 50)).toBeLessThanOrEqual(LIMIT);
  }, 60_000);

  it('each call reserves its worst case and settles to its actual use, freeing the rest at once', async () => {
    const model = `tpm-settle-${randomBytes(3).toString('hex')}`;
    const tokens = new TokenRateLimiter({ redis, prefix: PREFIX, model, limit: 1_000, windowMs: 60_000 });
    const first = await tokens.tryGrant(800);
    expect(first.ok).toBe(true);
    expect(await tokens.tryGrant(300)).toMatchObject({ ok: false });
    if (!first.ok) throw new Error('unreachable');
    await tokens.settle(first.grant, 150);
    expect(await tokens.tryGrant(300)).toMatchObject({ ok: true });
    // A call bigger than the whole window never fits: the gate refuses it instead of waiting forever.
    const gate = gateForJob({ ledger: new SpendLedger({ redis, prefix: PREFIX }), tokens });
    const refused = await gate.acquire({ tokens: 5_000, costUsd: 0.01 }, new AbortController().signal);
    expect(refused).toMatchObject({ ok: false, reason: 'token_budget' });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.message).toContain('MODEL_TPM allows 1,000 tokens per minute');
  });
});

describe("the endpoint's x-ratelimit headers", () => {
  async function runAgainstLimitedEndpoint(honourHeaders: boolean) {
    // 1,500 tokens per second, refilled steadily, as the provider documents: a run's calls outpace it.
    const server = await scriptedServer({
      rules: [lookups()],
      rateLimits: { tokensPerMinute: 1_500, windowMs: 1_000 },
    });
    const connection = workerConnection();
    const limiter = new RateLimiter({
      redis: connection,
      prefix: `${PREFIX}-${honourHeaders ? 'headers' : 'blind'}`,
      limit: 1,
    });
    const raw = new OpenAIChatModel({ model: MODEL, apiKey: 'test', baseURL: server.baseURL });
    const pauses: number[] = [];
    const model = honourHeaders
      ? withProviderRateLimits(raw, { pause: (ms) => limiter.pause(ms), onSlowDown: (ms) => pauses.push(ms) })
      : raw;
    const gate = gateForJob({
      ledger: new SpendLedger({ redis: connection, prefix: PREFIX }),
      limiter,
      limitRequests: false,
    });
    const { result } = await runWith(server, {
      model,
      gate,
      budget: { maxSteps: 8, maxCostUsd: 1 },
      options: { completionTokens: 300, modelRetries: 6 },
    });
    return { result, server, pauses };
  }

  it('surface on the completion, and pause the fleet before the endpoint answers 429', async () => {
    const blind = await runAgainstLimitedEndpoint(false);
    // Without them, the run meets 429s (and the fleet pauses only after each one).
    expect(blind.server.rateLimits!.refused).toBeGreaterThan(0);

    const honoured = await runAgainstLimitedEndpoint(true);
    expect(honoured.result.steps).toBeGreaterThanOrEqual(blind.result.steps);
    expect(honoured.server.rateLimits!.refused).toBe(0);
    expect(honoured.pauses.length).toBeGreaterThan(0);
  }, 60_000);

  it('the OpenAI adapter reads them from the HTTP response', async () => {
    const server = await scriptedServer({
      script: [{ answer: 'hi' }],
      rateLimits: { tokensPerMinute: 10_000, requestsPerMinute: 30 },
    });
    const model = new OpenAIChatModel({ model: MODEL, apiKey: 'test', baseURL: server.baseURL });
    const completion = await model.complete(
      { messages: [{ role: 'user', content: 'hello' }], maxTokens: 50, temperature: 0 },
      { signal: new AbortController().signal, timeoutMs: 5_000 },
    );
    const used = server.requests[0]!.usage!;
    expect(completion.rateLimit).toMatchObject({
      limitTokens: 10_000,
      limitRequests: 30,
      remainingRequests: 29,
    });
    // What the call used left the bucket (a few tokens may have come back in the meantime).
    expect(completion.rateLimit!.remainingTokens).toBeLessThanOrEqual(10_000 - used.promptTokens);
    expect(completion.rateLimit!.resetTokensMs).toBeGreaterThan(0);
  });
});

describe('tenant daily caps', () => {
  it("many concurrent jobs of one tenant on two workers never overspend its day; other tenants' jobs go on", async () => {
    const CAP = 0.2;
    const tenant = `acme-${randomBytes(3).toString('hex')}`;
    const server = await scriptedServer({ rules: [lookups()], latencyMs: 20 });
    const started = Date.now();
    const runs = await Promise.all(
      [0, 1].flatMap(() => {
        const ledger = new SpendLedger({
          redis: workerConnection(),
          prefix: PREFIX,
          tenantDailyCaps: { maxCostUsd: CAP },
        });
        return Array.from({ length: 6 }, () =>
          runWith(server, { gate: gateForJob({ ledger, tenant }), budget: { maxSteps: 30, maxCostUsd: 1 } }),
        );
      }),
    );
    for (const { result } of runs)
      expect(result).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
    const monitor = new SpendLedger({ redis, prefix: PREFIX, tenantDailyCaps: { maxCostUsd: CAP } });
    let usedMicroUsd = 0;
    for (const at of new Set([started, Date.now()].map((t) => tenantDayScope(tenant, t)))) {
      const spend = await monitor.getSpend(at);
      expect(spend).toMatchObject({
        reservedMicroUsd: 0,
        liveReservations: 0,
        capMicroUsd: microUsdDown(CAP),
      });
      usedMicroUsd += spend.usedMicroUsd;
    }
    expect(usedMicroUsd).toBeLessThanOrEqual(microUsdDown(CAP));
    // Every call was booked and settled: the tenant's day holds the runs' usage, each call rounded up.
    const usage = runs.reduce((sum, { result }) => sum + result.usage.costUsd, 0);
    const calls = server.requests.length;
    expect(calls).toBeGreaterThan(runs.length);
    expect(usedMicroUsd).toBeGreaterThanOrEqual(microUsdUp(usage) - runs.length);
    expect(usedMicroUsd).toBeLessThanOrEqual(microUsdUp(usage) + calls);

    // Another tenant has a day of its own.
    server.reset({ script: [{ answer: 'done' }] });
    const other = await runWith(server, {
      gate: gateForJob({ ledger: monitor, tenant: `globex-${randomBytes(3).toString('hex')}` }),
    });
    expect(other.result).toMatchObject({ status: 'succeeded' });
  }, 60_000);
});

describe('why a shared budget refused a call', () => {
  it('names what was left of the cap, what the call needed and what other jobs held reserved', async () => {
    const batchId = `why-${randomBytes(3).toString('hex')}`;
    const ledger = new SpendLedger({ redis, prefix: PREFIX });
    await ledger.setCaps(batchScope(batchId), { maxCostUsd: 0.1 });
    // Another worker's jobs: one call done ($0.037), two in flight holding their worst cases.
    const other = new SpendLedger({ redis: workerConnection(), prefix: PREFIX });
    const scopes = [dayScope(Date.now()), batchScope(batchId)];
    const done = await other.reserve(scopes, { tokens: 1_000, costUsd: 0.05 });
    if (!done.ok) throw new Error('unreachable');
    await other.settle(done.ticket, { tokens: 700, costUsd: 0.037 });
    expect((await other.reserve(scopes, { tokens: 1_000, costUsd: 0.025 })).ok).toBe(true);
    expect((await other.reserve(scopes, { tokens: 1_000, costUsd: 0.025 })).ok).toBe(true);

    const refused = await ledger.reserve(scopes, { tokens: 1_000, costUsd: 0.02 });
    expect(refused).toMatchObject({
      ok: false,
      reason: 'cost_budget',
      scope: batchScope(batchId),
      detail: {
        unit: 'micro_usd',
        cap: 100_000,
        spent: 37_000,
        reservedByOthers: 50_000,
        left: 13_000,
        needed: 20_000,
      },
    });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.message).toBe(
      `The cost budget of batch ${batchId} cannot cover this call: $0.013 of $0.10 left, the call needs up to ` +
        '$0.02 ($0.037 spent, $0.05 reserved by other calls in flight at that moment)',
    );
    // The gate passes the same words to the kernel, which stops the run before calling the model.
    const decision = await gateForJob({ ledger, batchId }).acquire(
      { tokens: 1_000, costUsd: 0.02 },
      new AbortController().signal,
    );
    expect(decision).toMatchObject({ ok: false, reason: 'cost_budget', message: refused.message });

    // A tenant's cap says whose it is.
    const tenantLedger = new SpendLedger({ redis, prefix: PREFIX, tenantDailyCaps: { maxTokens: 500 } });
    const tenantRefusal = await tenantLedger.reserve([tenantDayScope('initech', Date.UTC(2031, 1, 2))], {
      tokens: 600,
      costUsd: 0,
    });
    if (tenantRefusal.ok) throw new Error('unreachable');
    expect(tenantRefusal.message).toContain(
      'The daily token cap of tenant initech for 2031-02-02 cannot cover this call: 500 tokens of 500 tokens left',
    );
  });
});
