// The usage fields of CONTRACT §11 through the kernel and the real OpenAI adapter over HTTP: cached prompt tokens
// billed at the cached-input price to the micro-dollar of the server's own accounting, usage the endpoint did not
// report estimated and flagged, and a resumed run billed at the prices it started with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIChatModel } from '../src/llm/openai-chat-model.js';
import { costUsd, type ModelPrice } from '../src/kernel/pricing.js';
import { priceOf } from '../src/llm/price-table.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(async () => {
  await server.close();
});

const gpt41 = priceOf('gpt-4.1');
const modelFor = (name: string) =>
  new OpenAIChatModel({ model: name, apiKey: 'test', baseURL: server.baseURL });

/** The bill of the requests since `from`, from the server's own accounting. */
function serverBill(price: ModelPrice, from: number) {
  const usages = server.requests.slice(from).map((r) => r.usage!);
  const sum = (pick: (u: (typeof usages)[number]) => number) => usages.reduce((n, u) => n + pick(u), 0);
  const tokens = {
    promptTokens: sum((u) => u.promptTokens),
    completionTokens: sum((u) => u.completionTokens),
    cachedPromptTokens: sum((u) => u.cachedPromptTokens ?? 0),
  };
  const costUsdByCall = usages.reduce((total, u) => total + costUsd(price, u), 0);
  return { ...tokens, costUsd: costUsdByCall };
}

describe('usage fields', () => {
  it('bills cached prompt tokens at the cached-input price and reports them in the result and traces', async () => {
    const from = server.requests.length;
    server.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 7 } }] },
        { actions: [{ tool: 'add', args: { a: 2, b: 3 } }], cachedTokens: 256 },
        { answer: 'customer-7; 5', cachedTokens: 384 },
      ],
    });
    const { result, traces } = await runWith(server, { model: modelFor('gpt-4.1'), price: gpt41 });
    expect(result.status).toBe('succeeded');
    const bill = serverBill(gpt41, from);
    expect(bill.cachedPromptTokens).toBe(640);
    expect(result.usage).toMatchObject({
      promptTokens: bill.promptTokens,
      completionTokens: bill.completionTokens,
      cachedPromptTokens: 640,
      totalTokens: bill.promptTokens + bill.completionTokens,
    });
    expect(result.usage.costUsd).toBeCloseTo(bill.costUsd, 12);
    // Less than the same tokens at the full input price, by exactly the cache's discount.
    const full = costUsd(gpt41, { promptTokens: bill.promptTokens, completionTokens: bill.completionTokens });
    expect(full - result.usage.costUsd).toBeCloseTo((640 * (2 - 0.5)) / 1e6, 12);
    expect(traces.map((t) => t.cachedPromptTokens ?? 0)).toEqual([0, 256, 384]);
    expect(result.usage.estimated).toBeUndefined();
    expect(result.usage.reasoningTokens).toBeUndefined();
  });

  it('estimates a reply without usage, flags it, and counts the estimate against the budget', async () => {
    const from = server.requests.length;
    server.reset({
      script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }], usage: false }, { answer: 'done' }],
    });
    const { result } = await runWith(server, { model: modelFor('gpt-4.1'), price: gpt41 });
    expect(result.status).toBe('succeeded');
    expect(result.usage.estimated).toBe(true);
    const reported = server.requests[from + 1]!.usage!;
    // The first call's estimate is at least what was sent (our prompt bound), so the total is above the second's.
    expect(result.usage.promptTokens).toBeGreaterThan(reported.promptTokens);
    expect(result.usage.costUsd).toBeGreaterThan(costUsd(gpt41, reported));
  });

  it('bills a resumed run at the prices it started with, whatever the table says now', async () => {
    server.reset({
      script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }] }, { answer: 'done', cachedTokens: 128 }],
    });
    const first = await runWith(server, {
      model: modelFor('gpt-4.1'),
      price: gpt41,
      budget: { maxSteps: 8 },
    });
    const checkpoint = first.checkpoints.find((c) => c.steps === 1 && c.pending === null)!;
    expect(checkpoint.price).toEqual(gpt41);
    server.reset({ script: [{ answer: 'done', cachedTokens: 128 }] });
    const from = server.requests.length;
    const repriced = { inputPerMillion: 20, cachedInputPerMillion: 5, outputPerMillion: 80 };
    const resumed = await runWith(server, {
      model: modelFor('gpt-4.1'),
      price: repriced,
      checkpoint: JSON.parse(JSON.stringify(checkpoint)),
    });
    expect(resumed.result.status).toBe('succeeded');
    const all = { ...checkpoint.usage };
    const last = server.requests[from]!.usage!;
    const expected = costUsd(gpt41, {
      promptTokens: all.promptTokens + last.promptTokens,
      completionTokens: all.completionTokens + last.completionTokens,
      cachedPromptTokens: (all.cachedPromptTokens ?? 0) + (last.cachedPromptTokens ?? 0),
    });
    expect(resumed.result.usage.costUsd).toBeCloseTo(expected, 12);
  });
});
