// Spend outside a run's own turns (side-spend.ts): an embedding paid before the run starts and one a tool pays
// through its purse are inside the run's hard budget, in its result's usage (with the `embeddings` breakdown) and
// its checkpoint, and booked with the fleet's gate; a worst case the budget left cannot pay is refused.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import type { CallCost, CallGate, GateDecision } from '../../../src/kernel/call-gate.js';
import type { SidePayment } from '../../../src/kernel/side-spend.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

class RecordingGate implements CallGate {
  acquired: CallCost[] = [];
  released: CallCost[] = [];
  refuse = false;
  async acquire(worst: CallCost): Promise<GateDecision> {
    if (this.refuse) return { ok: false, reason: 'cost_budget', message: 'batch spent' };
    this.acquired.push(worst);
    return { ok: true, ticket: String(this.acquired.length) };
  }
  async release(_ticket: string, actual: CallCost): Promise<void> {
    this.released.push(actual);
  }
}

/** A tool that pays a side call of `worst`, settled at `actual`; says whether it was paid. */
function payingTools(worst: CallCost, actual: CallCost) {
  const paid: (SidePayment | null)[] = [];
  const registry = new ToolRegistry([
    defineTool({
      name: 'embed',
      description: 'Embeds a text.',
      parameters: z.object({ text: z.string() }),
      readOnly: true,
      async execute(_args, ctx) {
        const payment = (await ctx.purse?.reserve(worst, ctx.signal)) ?? null;
        paid.push(payment);
        if (!payment) return 'not paid';
        await payment.settle(actual);
        return 'paid';
      },
    }),
  ]);
  return { registry, paid };
}

const script = () => [{ actions: [{ tool: 'embed', args: { text: 'x' } }] }, { answer: 'done' }];

it('an embedding paid before the run and one paid through the purse are in its usage, its budget and its checkpoint', async () => {
  server.reset({ script: script() });
  const gate = new RecordingGate();
  const { registry } = payingTools({ tokens: 40, costUsd: 0.0000008 }, { tokens: 12, costUsd: 0.00000024 });
  const before = { calls: 1, tokens: 9, costUsd: 0.00000018 };
  const { result, checkpoints } = await runWith(server, { tools: registry, gate, embeddings: before });
  expect(result.status).toBe('succeeded');
  const chat = server.requests.slice(-2);
  const prompt = chat.reduce((sum, r) => sum + r.usage!.promptTokens, 0);
  const completion = chat.reduce((sum, r) => sum + r.usage!.completionTokens, 0);
  expect(result.usage.promptTokens).toBe(prompt + 9 + 12);
  expect(result.usage.totalTokens).toBe(prompt + completion + 21);
  expect(result.usage.embeddings).toEqual({ calls: 2, tokens: 21, costUsd: expect.closeTo(0.00000042, 15) });
  expect(checkpoints.at(-1)?.embeddings).toMatchObject({ calls: 2, tokens: 21 });
  // The gate booked the purse's worst case and settled what it cost (the model calls' bookings besides).
  expect(gate.acquired).toContainEqual({ tokens: 40, costUsd: 0.0000008 });
  expect(gate.released).toContainEqual({ tokens: 12, costUsd: 0.00000024 });
});

it('a worst case past what the budget leaves (after the final answer) is refused, and the run stays within it', async () => {
  server.reset({ script: script() });
  const { registry, paid } = payingTools({ tokens: 9_900, costUsd: 0 }, { tokens: 9_900, costUsd: 0 });
  const { result } = await runWith(server, { tools: registry, budget: { maxTokens: 10_000 } });
  expect(paid).toEqual([null]);
  expect(result.usage.embeddings).toBeUndefined();
  expect(result.usage.totalTokens).toBeLessThanOrEqual(10_000);
});

it('a gate that refuses refuses the side call; the run goes on', async () => {
  server.reset({ script: script() });
  const gate = new RecordingGate();
  const { registry, paid } = payingTools(
    { tokens: 10, costUsd: 0.0000002 },
    { tokens: 10, costUsd: 0.0000002 },
  );
  gate.refuse = true;
  const tools = registry;
  // The model calls need the gate too: let them through, refuse only the side call's worst case.
  gate.acquire = async (worst) =>
    worst.tokens === 10
      ? { ok: false, reason: 'cost_budget', message: 'batch spent' }
      : { ok: true, ticket: 't' };
  const { result } = await runWith(server, { tools, gate });
  expect(result.status).toBe('succeeded');
  expect(paid).toEqual([null]);
  expect(result.usage.embeddings).toBeUndefined();
});

it('spend before the run comes off its budget: a run whose embeddings took its tokens stops on its budget', async () => {
  server.reset({ script: [{ answer: 'done' }] });
  const { result } = await runWith(server, {
    budget: { maxTokens: 1_000 },
    embeddings: { calls: 1, tokens: 990, costUsd: 0.0000198 },
  });
  expect(result.stopReason).toBe('token_budget');
  expect(result.usage.totalTokens).toBeLessThanOrEqual(1_000);
});

it('a worst case that fits is paid, and the budget left for the turns shrinks by it: the run stays within it', async () => {
  server.reset({ script: script() });
  const { registry, paid } = payingTools({ tokens: 9_000, costUsd: 0 }, { tokens: 9_000, costUsd: 0 });
  const { result } = await runWith(server, { tools: registry, budget: { maxTokens: 10_000 } });
  expect(paid[0]).not.toBeNull();
  expect(result.usage.embeddings).toMatchObject({ calls: 1, tokens: 9_000 });
  expect(result.usage.totalTokens).toBeLessThanOrEqual(10_000);
});

/** A tool that reserves `worst`, then ignores its signal and settles `worst` (what it may have cost) after `lateMs`. */
function lateSettlingTools(worst: CallCost, lateMs: number, afterReserve = () => {}) {
  const settledAt: number[] = [];
  const registry = new ToolRegistry([
    defineTool({
      name: 'embed',
      description: 'Embeds a text.',
      parameters: z.object({ text: z.string() }),
      readOnly: true,
      timeoutMs: 50,
      async execute(_args, ctx) {
        const payment = await ctx.purse?.reserve(worst, ctx.signal);
        if (!payment) return 'not paid';
        afterReserve();
        // An embedding sent, its answer (or its abort) landing after the kernel stopped waiting for the call.
        await new Promise((resolve) => setTimeout(resolve, lateMs));
        await payment.settle(worst);
        settledAt.push(Date.now());
        return 'paid';
      },
    }),
  ]);
  return { registry, settledAt };
}

it('a side call still in flight when the run ends (timed out, cancelled) is in its usage and checkpoint at its worst case', async () => {
  for (const how of ['timed out', 'cancelled'] as const) {
    server.reset({ script: script() });
    const gate = new RecordingGate();
    const worst = { tokens: 40, costUsd: 0.0000008 };
    const controller = new AbortController();
    // Cancelled once the side call is paid for and on its way.
    const cancel = () => how === 'cancelled' && controller.abort(new Error('cancelled'));
    const { registry, settledAt } = lateSettlingTools(worst, 300, cancel);
    const { result, checkpoints } = await runWith(server, {
      tools: registry,
      gate,
      signal: controller.signal,
    });
    expect(result.stopReason, how).toBe(how === 'cancelled' ? 'cancelled' : 'answer');
    expect(result.usage.embeddings, how).toEqual({ calls: 1, ...worst });
    expect(checkpoints.at(-1)?.embeddings, how).toEqual({ calls: 1, ...worst });
    // The late settlement neither counts it twice nor books less with the gate than the run counted.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settledAt).toHaveLength(1);
    expect(gate.released, how).toContainEqual(worst);
    expect(checkpoints.at(-1)?.embeddings, how).toEqual({ calls: 1, ...worst });
  }
});

it('a tool that goes on after its call ended (ignoring its signal) cannot pay a side call outside the run’s usage', async () => {
  server.reset({ script: script() });
  const gate = new RecordingGate();
  const late: (SidePayment | null)[] = [];
  let done: () => void = () => {};
  const reservedLate = new Promise<void>((resolve) => (done = resolve));
  const registry = new ToolRegistry([
    defineTool({
      name: 'embed',
      description: 'Embeds a text.',
      parameters: z.object({ text: z.string() }),
      readOnly: true,
      timeoutMs: 30,
      async execute(_args, ctx) {
        // Past its time limit, and then past the run's end, it still tries to pay.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const payment = (await ctx.purse?.reserve({ tokens: 40, costUsd: 0.0000008 }, ctx.signal)) ?? null;
        late.push(payment);
        await payment?.settle({ tokens: 40, costUsd: 0.0000008 });
        done();
        return 'paid';
      },
    }),
  ]);
  const { result } = await runWith(server, { tools: registry, gate });
  await reservedLate;
  expect(result.stopReason).toBe('answer');
  expect(late).toEqual([null]);
  expect(gate.acquired).not.toContainEqual({ tokens: 40, costUsd: 0.0000008 });
});

it('time spent before the run (its opening recall) counts against its deadline when it says when it began', async () => {
  server.reset({ script: [{ answer: 'done' }] });
  const deadlineMs = 5_000;
  // It began (its opening recall's embedding) nearly its whole deadline ago.
  const { result } = await runWith(server, {
    budget: { deadlineMs },
    startedAt: Date.now() - deadlineMs + 100,
  });
  expect(result.stopReason).toBe('deadline');
});
