// The kernel's bill, checked over randomized runs against the scripted model over HTTP: with cached and reasoning
// tokens in the replies, reasoning models, the flex tier and its "resource unavailable" faults (so calls fall back
// to the default tier, after the retries or near the deadline), no run ends above a limit, and the bill equals the
// server's own accounting of what it served, call by call at the tier it answered, to 1e-12 USD.
// Replay a failure with BILLING_PROPERTY_SEED=<seed> (the seed is printed).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIChatModel } from '../src/llm/openai-chat-model.js';
import { costUsd, type ModelPrice } from '../src/kernel/pricing.js';
import { priceOf } from '../src/llm/price-table.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../src/testing/scripted-model-server.js';
import { isFault } from '../src/testing/scripted-reply.js';
import { runWith } from './support/kernel-harness.js';
import type { TokenUsage } from '../src/kernel/budget.js';

const DEFAULT_SEED = 1_602_026;
const SEED = seedFromEnv('BILLING_PROPERTY_SEED', DEFAULT_SEED);
const RUNS = 250;

function seedFromEnv(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new Error(`${name}=${JSON.stringify(raw)} must be an integer`);
  return Number(raw);
}

let plain: ScriptedModelServer;
let reasoning: ScriptedModelServer;
/** Emulates the provider's prompt caching: cache hits from the prompts the kernel lays out, not from the script. */
let caching: ScriptedModelServer;
beforeAll(async () => {
  [plain, reasoning, caching] = await Promise.all([
    startScriptedModel(),
    startScriptedModel({ reasoningModel: true }),
    startScriptedModel({ promptCache: true }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain.close(), reasoning.close(), caching.close()]);
});

// Models with cached-input prices; the first four also with flex prices and `reasoning: true`. A flex request to
// a model without flex prices is billed at its standard ones (as the provider does).
const MODELS = ['gpt-5', 'gpt-5-mini', 'o4-mini', 'o3', 'gpt-4.1', 'gpt-4o-mini'] as const;

const action = fc.oneof(
  fc.record({ tool: fc.constant('lookup'), args: fc.record({ id: fc.integer({ min: 1, max: 50 }) }) }),
  fc.record({ tool: fc.constant('add'), args: fc.record({ a: fc.integer(), b: fc.integer() }) }),
  fc.record({ tool: fc.constantFrom('big', 'broken', 'no_such_tool'), args: fc.constant({}) }),
);

const content: fc.Arbitrary<ScriptedReply> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ actions: fc.array(action, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ answer: fc.string({ maxLength: 200 }) }) },
  { weight: 1, arbitrary: fc.record({ text: fc.string({ maxLength: 100 }) }) },
);

/** Cached and reasoning tokens on a share of replies, up to more than a call's whole prompt or limit. */
const extras = fc.record({
  cachedTokens: fc.option(fc.oneof(fc.integer({ min: 1, max: 1_500 }), fc.constant(100_000)), { freq: 2 }),
  reasoningTokens: fc.option(fc.oneof(fc.integer({ min: 1, max: 400 }), fc.constant(5_000)), { freq: 2 }),
  /** No usage reported, as a local server may answer: the kernel estimates it and flags the bill. */
  withoutUsage: fc.integer({ min: 0, max: 24 }).map((n) => n === 0),
});

const replies: fc.Arbitrary<ScriptedReply | ScriptedReply[]> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(content, extras).map(([c, e]): ScriptedReply => ({
      ...c,
      ...(e.cachedTokens !== null ? { cachedTokens: e.cachedTokens } : {}),
      ...(e.reasoningTokens !== null ? { reasoningTokens: e.reasoningTokens } : {}),
      ...(e.withoutUsage ? { usage: false as const } : {}),
    })),
  },
  // Flex without capacity for a while: sometimes longer than the retries, so the call falls back.
  {
    weight: 3,
    arbitrary: fc
      .integer({ min: 1, max: 4 })
      .map((n) => Array.from({ length: n }, (): ScriptedReply => ({ fault: 'flex_unavailable' }))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<ScriptedReply>(
      { fault: 'server_error' },
      { fault: 'rate_limit', retryAfterSeconds: 0 },
      { fault: 'malformed_body' },
    ),
  },
);

const scenario = fc.record({
  model: fc.constantFrom(...MODELS),
  /** A reasoning-priced model behind a server that refuses `max_tokens` and temperatures, as OpenAI's do. */
  strictReasoningServer: fc.boolean(),
  /** Otherwise, a server emulating the prompt cache on a share of runs. */
  emulatedCache: fc.boolean(),
  /** On the lenient server, a reasoning-priced model may also be called the older way. */
  reasoningShape: fc.boolean(),
  serviceTier: fc.constantFrom('flex', 'flex', 'flex', 'default', undefined),
  modelRetries: fc.integer({ min: 0, max: 3 }),
  protocol: fc.constantFrom('tools' as const, 'json' as const),
  maxSteps: fc.integer({ min: 1, max: 6 }),
  maxTokens: fc.oneof(
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 1_500 }) },
    { weight: 3, arbitrary: fc.integer({ min: 1_500, max: 12_000 }) },
  ),
  maxCostUsd: fc.oneof(
    { weight: 1, arbitrary: fc.double({ min: 0.0002, max: 0.005, noNaN: true }) },
    { weight: 3, arbitrary: fc.double({ min: 0.005, max: 0.1, noNaN: true }) },
  ),
  // The default memory (a facts message in place of old turns) and the sliding window.
  memoryWindow: fc.oneof(fc.constant('auto' as const), fc.integer({ min: 2, max: 8 })),
  completionTokens: fc.integer({ min: 16, max: 600 }),
  script: fc.array(replies, { maxLength: 10 }).map((items) => items.flat()),
  /** A short deadline and slow replies on a share of runs: flex falls back to the default tier near it. */
  slow: fc.oneof(
    { weight: 5, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({
        deadlineMs: fc.integer({ min: 300, max: 500 }),
        latencyMs: fc.array(fc.integer({ min: 20, max: 160 }), { minLength: 10, maxLength: 10 }),
      }),
    },
  ),
});

const LONG_TASK = `Find customer 7 and add 2 and 3. ${'Customers have an id, a name and an email. '.repeat(130)}`;

type Served = { request: RecordedRequest; reply: ScriptedReply };

/** The server's own bill: each call it answered with usage, at the prices of the tier it answered at. */
function serverAccount(price: ModelPrice, served: readonly Served[]) {
  let cost = 0;
  let standardCost = 0;
  const tokens = { prompt: 0, completion: 0, cached: 0, reasoning: 0 };
  const flex = { promptTokens: 0, cachedPromptTokens: 0, completionTokens: 0 };
  let flexCalls = 0;
  for (const { request } of served) {
    const usage = request.usage;
    if (!usage) continue;
    const atFlex = request.body.service_tier === 'flex';
    const billed: TokenUsage = {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedPromptTokens: usage.cachedPromptTokens ?? 0,
    };
    // Computed here from the price table itself, not through the kernel's flex bookkeeping.
    cost += costUsd(atFlex ? (price.flex ?? price) : price, billed);
    standardCost += costUsd(price, billed);
    tokens.prompt += usage.promptTokens;
    tokens.completion += usage.completionTokens;
    tokens.cached += usage.cachedPromptTokens ?? 0;
    tokens.reasoning += usage.reasoningTokens ?? 0;
    if (atFlex) {
      flexCalls++;
      flex.promptTokens += usage.promptTokens;
      flex.cachedPromptTokens += usage.cachedPromptTokens ?? 0;
      flex.completionTokens += usage.completionTokens;
    }
  }
  return { cost, standardCost, tokens, flex, flexCalls };
}

describe('bills and limits with caching, reasoning and flex (property)', () => {
  it('no run ends above a limit, and each bill is the server’s own to 1e-12 USD', async () => {
    process.stdout.write(`billing property: seed ${SEED} (BILLING_PROPERTY_SEED to replay)\n`);
    const seen = {
      runs: 0,
      exact: 0,
      cached: 0,
      reasoning: 0,
      strictServer: 0,
      flexServed: 0,
      fallbackAfterRetries: 0,
      fallbackNearDeadline: 0,
      exactWithFallback: 0,
      emulatedCacheHits: 0,
      estimated: 0,
    };
    const stopReasons = new Set<string>();
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const price = priceOf(s.model);
        const strict = s.strictReasoningServer && price.reasoning === true;
        const server = strict ? reasoning : s.emulatedCache ? caching : plain;
        const served: Served[] = [];
        let next = 0;
        const fallback: ScriptedReply = { answer: 'fallback answer', cachedTokens: 64, reasoningTokens: 8 };
        server.reset({
          rules: [
            (request) => {
              const scripted = s.script[next] ?? fallback;
              const latencyMs = s.slow?.latencyMs[next % 10] ?? 0;
              next++;
              const chosen = latencyMs > 0 ? { ...scripted, latencyMs } : scripted;
              served.push({ request, reply: chosen });
              return chosen;
            },
          ],
        });
        const from = server.requests.length;
        const started = Date.now();
        const { result } = await runWith(server, {
          model: new OpenAIChatModel({ model: s.model, apiKey: 'test', baseURL: server.baseURL }),
          price,
          protocol: s.protocol,
          // Long enough for the provider's cache (prompts of 1,024 tokens and more), on the emulating server.
          ...(server === caching ? { task: LONG_TASK } : {}),
          budget: {
            maxSteps: s.maxSteps,
            maxTokens: s.maxTokens,
            maxCostUsd: s.maxCostUsd,
            deadlineMs: s.slow?.deadlineMs ?? 30_000,
          },
          options: {
            memoryWindow: s.memoryWindow,
            completionTokens: s.completionTokens,
            modelRetries: s.modelRetries,
            modelRetryBaseDelayMs: 0,
            toolRetryBaseDelayMs: 0,
            ...(s.serviceTier ? { serviceTier: s.serviceTier } : {}),
            ...(strict || price.reasoning !== true ? {} : { reasoningModel: s.reasoningShape }),
          },
        });
        // A request the run sent just before giving up on it may reach the server's handler a moment later.
        if (s.slow) await new Promise((resolve) => setTimeout(resolve, 100));
        seen.runs++;
        stopReasons.add(result.stopReason);
        const requests = server.requests.slice(from);
        expect(requests.length).toBe(served.length);
        expect(server.failures).toEqual([]);

        // No limit exceeded.
        const usage = result.usage;
        expect(usage.totalTokens).toBeLessThanOrEqual(s.maxTokens);
        expect(usage.costUsd).toBeLessThanOrEqual(s.maxCostUsd);
        expect(result.steps).toBeLessThanOrEqual(s.maxSteps);
        expect(usage.totalTokens).toBe(usage.promptTokens + usage.completionTokens);

        // Requests shaped for the model and sent at the tier asked for, falling back only to the default tier.
        for (const { body } of requests) {
          expect(body.model).toBe(s.model); // nothing of an earlier run reached this one
          if (strict) expect(body).not.toHaveProperty('max_tokens');
          if (s.serviceTier === undefined) expect(body).not.toHaveProperty('service_tier');
          if (s.serviceTier === 'default') expect(body.service_tier).toBe('default');
        }
        const tiers = requests.map((r) => r.body.service_tier as string | undefined);
        const firstDefault = tiers.indexOf('default');
        if (s.serviceTier === 'flex' && firstDefault > 0) {
          // After the retries: the attempts of one call all failed, the last with flex unavailable.
          let failed = 0;
          while (failed < firstDefault && isFault(served[firstDefault - 1 - failed]!.reply)) failed++;
          const last = served[firstDefault - 1]!.reply;
          const afterRetries = failed > s.modelRetries && isFault(last) && last.fault === 'flex_unavailable';
          if (afterRetries) seen.fallbackAfterRetries++;
          else seen.fallbackNearDeadline++;
        }

        // The server's own accounting against the bill.
        const account = serverAccount(price, served);
        const withoutUsage = served.some(({ reply: r }) => !isFault(r) && r.usage === false);
        // Calls the kernel charged without a report to bill from: a garbled body, or a reply cut off in flight.
        const unreported = served.some(
          ({ request, reply: r }) =>
            (isFault(r) ? r.fault === 'malformed_body' : r.usage !== false) && request.usage === undefined,
        );
        // A slow run gives up on a call no earlier than 85% of its deadline (the final turn's reserve): a reply
        // (even a fault) the server sent from then on may have been cut off in flight and charged at its
        // reservation, so there the bill may only be above the server's (50 ms of slack for a loaded machine).
        const givesUpFrom = started + 0.85 * (s.slow?.deadlineMs ?? Infinity) - 50;
        const cutOff = served.some(
          ({ request, reply: r }) => request.receivedAt + (r.latencyMs ?? 0) >= givesUpFrom,
        );
        if (cutOff) {
          expect(usage.cachedPromptTokens ?? 0).toBeLessThanOrEqual(account.tokens.cached);
          expect(usage.reasoningTokens ?? 0).toBeLessThanOrEqual(account.tokens.reasoning);
        } else {
          expect(usage.cachedPromptTokens ?? 0).toBe(account.tokens.cached);
          expect(usage.reasoningTokens ?? 0).toBe(account.tokens.reasoning);
        }
        if (usage.estimated) expect(withoutUsage).toBe(true);
        else if (!cutOff) expect(withoutUsage).toBe(false); // a reply without usage is always estimated
        if (usage.estimated) seen.estimated++;
        if (!withoutUsage && !unreported && !cutOff) {
          seen.exact++;
          if (s.serviceTier === 'flex' && firstDefault > 0) seen.exactWithFallback++;
          expect(Math.abs(usage.costUsd - account.cost)).toBeLessThanOrEqual(1e-12);
          expect(usage.promptTokens).toBe(account.tokens.prompt);
          expect(usage.completionTokens).toBe(account.tokens.completion);
          if (account.flexCalls > 0) {
            expect(usage.flex).toEqual(account.flex);
            expect(
              Math.abs((usage.flexSavedUsd ?? 0) - (account.standardCost - account.cost)),
            ).toBeLessThanOrEqual(1e-12);
          } else {
            expect(usage.flex).toBeUndefined();
            expect(usage.flexSavedUsd).toBeUndefined();
          }
        } else {
          // What the kernel charged in place of a report only ever overstates the bill.
          expect(usage.costUsd).toBeGreaterThanOrEqual(account.cost - 1e-12);
          expect(usage.promptTokens).toBeGreaterThanOrEqual(account.tokens.prompt);
        }
        if (account.tokens.cached > 0) seen.cached++;
        if (account.tokens.reasoning > 0) seen.reasoning++;
        if (account.flexCalls > 0) seen.flexServed++;
        if (strict) seen.strictServer++;
        const emulatedHit = served.some(
          ({ request, reply: r }) =>
            !isFault(r) && r.cachedTokens === undefined && (request.usage?.cachedPromptTokens ?? 0) > 0,
        );
        if (server === caching && emulatedHit) seen.emulatedCacheHits++;
      }),
      { numRuns: RUNS, seed: SEED },
    );
    process.stdout.write(`billing property: ${JSON.stringify(seen)} stops ${[...stopReasons].join(',')}\n`);
    expect(seen.runs).toBe(RUNS);
    // Coverage at the fixed seed (another seed, given to replay a failure, checks the property alone).
    if (SEED !== DEFAULT_SEED) return;
    // The random runs really exercised what they are about, and most are checked to the exact bill.
    expect(seen.exact).toBeGreaterThanOrEqual(RUNS / 2);
    expect(seen.cached).toBeGreaterThanOrEqual(RUNS / 4);
    expect(seen.reasoning).toBeGreaterThanOrEqual(RUNS / 4);
    expect(seen.strictServer).toBeGreaterThanOrEqual(RUNS / 10);
    expect(seen.emulatedCacheHits).toBeGreaterThanOrEqual(5);
    expect(seen.flexServed).toBeGreaterThanOrEqual(RUNS / 4);
    expect(seen.fallbackAfterRetries).toBeGreaterThanOrEqual(5);
    // Timing decides these on a loaded machine: at least one is enough to know the path was taken.
    expect(seen.fallbackNearDeadline).toBeGreaterThanOrEqual(1);
    expect(seen.exactWithFallback).toBeGreaterThanOrEqual(5);
    expect(seen.estimated).toBeGreaterThanOrEqual(5);
    expect([...stopReasons]).toEqual(
      expect.arrayContaining(['answer', 'max_steps', 'token_budget', 'cost_budget']),
    );
  }, 120_000);
});
