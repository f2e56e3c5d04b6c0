// The kernel's central promise, checked over 500 randomized runs against the scripted model over HTTP:
// whatever the model says or does, no run ends with usage above any of its limits.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, tokenCounterFor } from '../../../src/kernel/tokens.js';
import { endpointPromptTokens } from '../../../src/testing/endpoint-prompt-count.js';
import {
  startScriptedModel,
  type EndpointPromptCounting,
  type ReplyRule,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { MODEL, runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

const action = fc.oneof(
  fc.record({ tool: fc.constant('lookup'), args: fc.record({ id: fc.integer({ min: 1, max: 50 }) }) }),
  fc.record({
    tool: fc.constant('add'),
    args: fc.record({ a: fc.integer(), b: fc.oneof(fc.integer(), fc.string()) }),
  }),
  fc.record({ tool: fc.constantFrom('big', 'broken', 'flaky', 'no_such_tool'), args: fc.constant({}) }),
);

const reply: fc.Arbitrary<ScriptedReply> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ actions: fc.array(action, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ answer: fc.string({ maxLength: 200 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      text: fc.oneof(fc.string(), fc.constant('```json\n{"tool": "lookup", "args": {"id": 2},}\n```')),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<ScriptedReply>(
      { fault: 'server_error' },
      { fault: 'rate_limit', retryAfterSeconds: 0 },
      { fault: 'malformed_body' },
      { answer: 'no usage reported', usage: false },
      { actions: [{ tool: 'lookup', args: { id: 9 } }], usage: false },
    ),
  },
);

const scenario = fc.record({
  protocol: fc.constantFrom('tools' as const, 'json' as const),
  maxSteps: fc.integer({ min: 1, max: 8 }),
  maxTokens: fc.oneof(
    { weight: 1, arbitrary: fc.integer({ min: 60, max: 1_500 }) },
    { weight: 3, arbitrary: fc.integer({ min: 1_500, max: 12_000 }) },
  ),
  maxCostUsd: fc.oneof(
    { weight: 1, arbitrary: fc.double({ min: 0.0005, max: 0.01, noNaN: true }) },
    { weight: 3, arbitrary: fc.double({ min: 0.01, max: 0.2, noNaN: true }) },
  ),
  memoryWindow: fc.integer({ min: 2, max: 8 }),
  completionTokens: fc.integer({ min: 16, max: 512 }),
  toolResultMaxTokens: fc.integer({ min: 50, max: 800 }),
  script: fc.array(reply, { maxLength: 12 }),
});

describe('budgets (property)', () => {
  it('no run ever ends above its step, token or cost limit', async () => {
    let runs = 0;
    let deepRuns = 0;
    const stopReasons = new Set<string>();
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        server.reset({ script: s.script, rules: [() => ({ answer: 'fallback answer' })] });
        const { result, traces } = await runWith(server, {
          protocol: s.protocol,
          budget: { maxSteps: s.maxSteps, maxTokens: s.maxTokens, maxCostUsd: s.maxCostUsd },
          options: {
            memoryWindow: s.memoryWindow,
            completionTokens: s.completionTokens,
            toolResultMaxTokens: s.toolResultMaxTokens,
            modelRetryBaseDelayMs: 0,
            toolRetryBaseDelayMs: 0,
          },
        });
        runs++;
        if (result.steps >= 3) deepRuns++;
        stopReasons.add(result.stopReason);
        expect(result.usage.totalTokens).toBeLessThanOrEqual(s.maxTokens);
        expect(result.usage.costUsd).toBeLessThanOrEqual(s.maxCostUsd);
        expect(result.steps).toBeLessThanOrEqual(s.maxSteps);
        expect(result.usage.totalTokens).toBe(result.usage.promptTokens + result.usage.completionTokens);
        expect(result.status).toBe(
          result.stopReason === 'answer' ? 'succeeded' : result.stopReason === 'error' ? 'failed' : 'stopped',
        );
        expect(traces.map((t) => t.step)).toEqual(traces.map((_, i) => i + 1));
        const traced = traces.reduce((sum, t) => sum + t.promptTokens + t.completionTokens, 0);
        expect(traced).toBeLessThanOrEqual(result.usage.totalTokens);
      }),
      { numRuns: 500 },
    );
    expect(runs).toBe(500);
    expect(deepRuns).toBeGreaterThanOrEqual(50);
    // The random scripts reach the budget stops, not only easy answers.
    expect([...stopReasons]).toEqual(
      expect.arrayContaining(['answer', 'max_steps', 'token_budget', 'cost_budget']),
    );
  }, 180_000);
});

// Endpoints count the tool calls of a conversation their own way, a few per cent above the documented count on
// tool-call-heavy histories (2.9–3.5% was seen in production; this goes further). A final turn squeezed into
// what is left, answered at full length, then passes the limit by the difference unless the estimate covers it.
const LONG_ANSWER = 'The best answer from what is known so far. '.repeat(120);

const lookups = (ids: number[]): ScriptedReply => ({
  actions: ids.map((id) => ({ tool: 'lookup', args: { id } })),
});

const skewedReply: fc.Arbitrary<ScriptedReply> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.array(fc.integer({ min: 1, max: 99 }), { minLength: 1, maxLength: 3 }).map(lookups),
  },
  { weight: 1, arbitrary: fc.record({ actions: fc.array(action, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.constant<ScriptedReply>({ answer: LONG_ANSWER }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<ScriptedReply>(
      { fault: 'server_error' },
      { fault: 'rate_limit', retryAfterSeconds: 0 },
      { fault: 'malformed_body' },
      { ...lookups([4, 5]), usage: false },
    ),
  },
);

/** Tool calls until the tools are taken away (the final turn), then an answer as long as max_tokens allows. */
const untilTheFinalTurn: ReplyRule = (request) =>
  request.tools ? lookups([request.index % 90, 1 + (request.index % 7), 42]) : { answer: LONG_ANSWER };

const skewedScenario = fc.record({
  protocol: fc.constantFrom('tools' as const, 'tools' as const, 'json' as const),
  // The estimate bounds a tool call's framing (up to its whole JSON) before any usage is reported; what an
  // endpoint adds beyond that bound is learnt from the first report, and until then only the margin covers it:
  // a few tokens a call beyond the JSON, much more beyond the fitted framing.
  counting: fc.oneof(
    fc.record<EndpointPromptCounting>({
      serializedToolCalls: fc.constant(false),
      extraTokensPerToolCall: fc.integer({ min: 0, max: 16 }),
    }),
    fc.record<EndpointPromptCounting>({
      serializedToolCalls: fc.constant(true),
      extraTokensPerToolCall: fc.integer({ min: 0, max: 4 }),
    }),
  ),
  maxSteps: fc.integer({ min: 2, max: 10 }),
  maxTokens: fc.integer({ min: 800, max: 8_000 }),
  maxCostUsd: fc.oneof(
    { weight: 2, arbitrary: fc.double({ min: 0.01, max: 0.08, noNaN: true }) },
    { weight: 1, arbitrary: fc.constant(1) },
  ),
  memoryWindow: fc.integer({ min: 4, max: 12 }),
  completionTokens: fc.integer({ min: 64, max: 512 }),
  toolResultMaxTokens: fc.integer({ min: 50, max: 400 }),
  script: fc.array(skewedReply, { maxLength: 10 }),
  endless: fc.boolean(),
});

describe('budgets when the endpoint counts more than the estimate (property)', () => {
  it('no run ends above its token or cost limit, whatever the endpoint adds for tool calls', async () => {
    const count = tokenCounterFor(MODEL);
    let worstRatio = 1;
    let skewedRuns = 0;
    const stopReasons = new Set<string>();
    await fc.assert(
      fc.asyncProperty(skewedScenario, async (s) => {
        const first = server.requests.length;
        server.reset({
          script: s.script,
          rules: [s.endless ? untilTheFinalTurn : () => ({ answer: LONG_ANSWER })],
          promptCounting: s.counting,
        });
        const { result } = await runWith(server, {
          protocol: s.protocol,
          budget: { maxSteps: s.maxSteps, maxTokens: s.maxTokens, maxCostUsd: s.maxCostUsd },
          options: {
            memoryWindow: s.memoryWindow,
            completionTokens: s.completionTokens,
            toolResultMaxTokens: s.toolResultMaxTokens,
            modelRetryBaseDelayMs: 0,
            toolRetryBaseDelayMs: 0,
          },
        });
        // How much more than the documented count the endpoint reported, at worst, in this run.
        let runRatio = 1;
        for (const request of server.requests.slice(first)) {
          const documented = countPromptTokens(request.messages, request.tools, count);
          const reported = endpointPromptTokens(request.messages, request.tools, count, s.counting);
          runRatio = Math.max(runRatio, reported / documented);
        }
        worstRatio = Math.max(worstRatio, runRatio);
        if (runRatio >= 1.029) skewedRuns++;
        stopReasons.add(result.stopReason);
        expect(result.usage.totalTokens).toBeLessThanOrEqual(s.maxTokens);
        expect(result.usage.costUsd).toBeLessThanOrEqual(s.maxCostUsd);
        expect(result.steps).toBeLessThanOrEqual(s.maxSteps);
      }),
      {
        numRuns: 400,
        examples: [
          // Found by CI: only the first prompt (no tool calls in it) was reported, the next reply came without
          // usage, and the final turn, on a history of five short calls, broke once and was retried squeezed:
          // the endpoint's 4 tokens a call beyond their JSON, 20 in all, were more than the margin covered.
          [
            {
              protocol: 'tools',
              counting: { serializedToolCalls: true, extraTokensPerToolCall: 4 },
              maxSteps: 3,
              maxTokens: 1835,
              maxCostUsd: 0.02119,
              memoryWindow: 7,
              completionTokens: 64,
              toolResultMaxTokens: 50,
              script: [
                {
                  actions: [
                    { tool: 'add', args: { a: 0, b: 0 } },
                    { tool: 'add', args: { a: 0, b: '' } },
                    { tool: 'flaky', args: {} },
                  ],
                },
                { ...lookups([4, 5]), usage: false },
                { fault: 'malformed_body' },
              ],
              endless: false,
            },
          ],
        ],
      },
    );
    // The runs really were counted high, and really reached the budget stops where the final turn is squeezed.
    expect(skewedRuns).toBeGreaterThanOrEqual(100);
    expect(worstRatio).toBeGreaterThan(1.06);
    expect([...stopReasons]).toEqual(expect.arrayContaining(['token_budget', 'cost_budget']));
  }, 180_000);
});
