// The flex tier through the kernel and the real OpenAI adapter, the scripted server behaving as OpenAI documents
// flex: `service_tier: "flex"` echoed in the response, and "429 Resource Unavailable" when it lacks capacity (not
// charged, not a rate limit). Calls are priced at the tier the response reports; flex falls back to the default
// tier once it stays unavailable or the deadline comes near; the fleet is never slowed for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallGate } from '../src/kernel/call-gate.js';
import { OpenAIChatModel } from '../src/llm/openai-chat-model.js';
import { costUsd } from '../src/kernel/pricing.js';
import { priceOf } from '../src/llm/price-table.js';
import { validateTask } from '../src/queue/task-schema.js';
import { validateBatch } from '../src/batch/batch-schema.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(async () => {
  await server.close();
});

const gpt5 = priceOf('gpt-5'); // input 1.25 / cached 0.125 / output 10; flex 0.625 / 0.0625 / 5
const model = () => new OpenAIChatModel({ model: 'gpt-5', apiKey: 'test', baseURL: server.baseURL });

/** A gate with no limits that records what the kernel tells it: enough to see whether the fleet is slowed. */
function recordingGate() {
  const slowDowns: (number | undefined)[] = [];
  let n = 0;
  const gate: CallGate = {
    acquire: async () => ({ ok: true, ticket: String(++n) }),
    release: async () => undefined,
    rateLimited: (ms) => void slowDowns.push(ms),
  };
  return { gate, slowDowns };
}

const tierOf = (i: number) => server.requests[i]!.body.service_tier as string | undefined;

describe('the flex tier', () => {
  it('asks for flex and bills each call at the tier the response reports, with the saving', async () => {
    server.reset({ script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }] }, { answer: 'done' }] });
    const from = server.requests.length;
    const { result } = await runWith(server, {
      model: model(),
      price: gpt5,
      options: { serviceTier: 'flex', reasoningModel: false },
    });
    expect(result.status).toBe('succeeded');
    expect([tierOf(from), tierOf(from + 1)]).toEqual(['flex', 'flex']);
    const usages = server.requests.slice(from).map((r) => r.usage!);
    const flexBill = usages.reduce((n, u) => n + costUsd(gpt5.flex!, u), 0);
    const standardBill = usages.reduce((n, u) => n + costUsd(gpt5, u), 0);
    expect(result.usage.costUsd).toBeCloseTo(flexBill, 12);
    expect(result.usage.flex).toMatchObject({ promptTokens: result.usage.promptTokens });
    expect(result.usage.flexSavedUsd).toBeCloseTo(standardBill - flexBill, 12);
  });

  it('retries flex unavailability with backoff, without slowing the fleet, and is not charged for it', async () => {
    server.reset({
      script: [{ fault: 'flex_unavailable' }, { fault: 'flex_unavailable' }, { answer: 'done' }],
    });
    const from = server.requests.length;
    const { gate, slowDowns } = recordingGate();
    const { result } = await runWith(server, {
      model: model(),
      price: gpt5,
      gate,
      options: { serviceTier: 'flex', reasoningModel: false, modelRetries: 3 },
    });
    expect(result.status).toBe('succeeded');
    expect(server.requests.length - from).toBe(3);
    expect(slowDowns).toEqual([]);
    const answered = server.requests[from + 2]!.usage!;
    expect(result.usage.costUsd).toBeCloseTo(costUsd(gpt5.flex!, answered), 12);
  });

  it('falls back to the default tier once flex stays unavailable through the retries', async () => {
    server.reset({
      rules: [(r) => (r.body.service_tier === 'flex' ? { fault: 'flex_unavailable' } : { answer: 'done' })],
    });
    const from = server.requests.length;
    const { result } = await runWith(server, {
      model: model(),
      price: gpt5,
      options: { serviceTier: 'flex', reasoningModel: false, modelRetries: 2 },
    });
    expect(result.status).toBe('succeeded');
    const tiers = server.requests.slice(from).map((r) => r.body.service_tier);
    expect(tiers).toEqual(['flex', 'flex', 'flex', 'default']);
    expect(result.usage.costUsd).toBeCloseTo(costUsd(gpt5, server.requests.at(-1)!.usage!), 12);
    expect(result.usage.flex).toBeUndefined();
  });

  it('falls back to the default tier when the deadline comes near', async () => {
    // A slow flex reply leaves less than a quarter of the 4 s deadline: the next call goes at the default tier.
    server.reset({
      script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }], latencyMs: 2_700 }, { answer: 'done' }],
    });
    const from = server.requests.length;
    const { result } = await runWith(server, {
      model: model(),
      price: gpt5,
      budget: { deadlineMs: 4_000 },
      options: { serviceTier: 'flex', reasoningModel: false },
    });
    expect(result.status).toBe('succeeded');
    expect([tierOf(from), tierOf(from + 1)]).toEqual(['flex', 'default']);
  });

  it('is a field of a task, of a batch and of an agent, refused with the field named when unknown', () => {
    expect(validateTask({ task: 'x', serviceTier: 'flex' })).toMatchObject({ ok: true });
    const bad = validateTask({ task: 'x', serviceTier: 'turbo' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]?.path).toBe('serviceTier');
    expect(validateBatch({ tasks: [{ task: 'x' }], serviceTier: 'flex' })).toMatchObject({ ok: true });
  });
});
