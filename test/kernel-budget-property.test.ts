// The kernel's central promise, checked over 500 randomized runs against the scripted model over HTTP:
// whatever the model says or does, no run ends with usage above any of its limits.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

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
