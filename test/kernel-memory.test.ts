// The sliding-window memory: pinned system prompt and task, a bounded verbatim window, a rolling summary
// written by the model (and paid for), and never a tool result separated from its call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/agent/messages.js';
import { isSummaryRequest } from '../src/agent/memory.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

/** A model that works through a fixed plan, answers summary requests, and answers when told to. */
function plannedModel(plan: { tool: string; args: unknown }[][], summary: () => unknown = () => undefined) {
  let step = 0;
  return (request: RecordedRequest) => {
    if (isSummaryRequest(request.messages)) {
      return (summary() as never) ?? { text: `Done: ${step} steps of work. Goal: finish the plan.` };
    }
    const actions = plan[step++];
    return actions ? { actions } : { answer: `finished ${plan.length} steps` };
  };
}

const PLAN = [
  [{ tool: 'big', args: {} }],
  [
    { tool: 'lookup', args: { id: 1 } },
    { tool: 'lookup', args: { id: 2 } },
    { tool: 'lookup', args: { id: 3 } },
  ],
  [{ tool: 'add', args: { a: 1, b: 1 } }],
  [{ tool: 'big', args: {} }],
  [{ tool: 'add', args: { a: 2, b: 2 } }],
];

/** Every tool message follows the assistant message that made its call, and every call has its result. */
function expectPairsIntact(messages: readonly ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role !== 'assistant' || !message.tool_calls) continue;
    const results = messages.slice(i + 1, i + 1 + message.tool_calls.length);
    expect(results.map((m) => (m.role === 'tool' ? m.tool_call_id : m.role))).toEqual(
      message.tool_calls.map((call) => call.id),
    );
  }
  const callIds = new Set(
    messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [])),
  );
  for (const message of messages)
    if (message.role === 'tool') expect(callIds.has(message.tool_call_id)).toBe(true);
}

describe('memory', () => {
  it('keeps the pinned messages, a bounded window and call/result pairs in every request', async () => {
    server.reset({ rules: [plannedModel(PLAN)] });
    const before = server.requests.length;
    const { result, traces } = await runWith(server, {
      budget: { maxCostUsd: 1 },
      options: { memoryWindow: 4, toolResultMaxTokens: 700 },
    });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'finished 5 steps', steps: 6 });

    const requests = server.requests.slice(before);
    const steps = requests.filter((r) => !isSummaryRequest(r.messages));
    const summaries = requests.filter((r) => isSummaryRequest(r.messages));
    expect(steps).toHaveLength(6);
    expect(summaries.length).toBeGreaterThan(0);
    for (const request of steps) {
      expect(request.messages[0]?.role).toBe('system');
      expect(request.messages[1]).toEqual({ role: 'user', content: 'Find customer 7 and add 2 and 3.' });
      expectPairsIntact(request.messages);
      const hasSummary = String(request.messages[2]?.content).startsWith('Summary of earlier steps:');
      const window = request.messages.slice(hasSummary ? 3 : 2);
      const lastTurn = window.length - window.findLastIndex((m) => m.role === 'assistant');
      expect(window.length).toBeLessThanOrEqual(Math.max(4, lastTurn));
    }
    // The model's summary is what later steps see (later small folds are appended to it), and its tokens
    // are on the bill.
    expect(steps.at(-1)?.messages[2]?.content).toMatch(
      /^Summary of earlier steps:\n[^]*Done: \d+ steps of work/,
    );
    const traced = traces.reduce((sum, t) => sum + t.promptTokens + t.completionTokens, 0);
    expect(traced).toBe(result.usage.totalTokens);
    expect(traces.reduce((sum, t) => sum + t.modelCalls, 0)).toBe(requests.length);
  });

  it('falls back to a deterministic summary when the summary call fails', async () => {
    server.reset({ rules: [plannedModel(PLAN, () => ({ fault: 'bad_request' }))] });
    const before = server.requests.length;
    const { result } = await runWith(server, {
      budget: { maxCostUsd: 1 },
      options: { memoryWindow: 4, toolResultMaxTokens: 700 },
    });
    expect(result).toMatchObject({ status: 'succeeded', steps: 6 });
    const last = server.requests.at(-1)!;
    expect(last.messages[2]?.content).toMatch(/^Summary of earlier steps:\nDone so far:\n- call big\(\{\}\)/);
    expect(last.messages[2]?.content).toMatch(/Current goal: finish the task above/);
    expect(server.requests.length - before).toBeGreaterThan(6);
  });

  it('does not pay for a summary when the folded part is small', async () => {
    const small = [1, 2, 3, 4, 5].map((id) => [{ tool: 'lookup', args: { id } }]);
    server.reset({ rules: [plannedModel(small)] });
    const before = server.requests.length;
    const { result } = await runWith(server, { options: { memoryWindow: 4 } });
    expect(result.steps).toBe(6);
    const requests = server.requests.slice(before);
    expect(requests.filter((r) => isSummaryRequest(r.messages))).toHaveLength(0);
    expect(requests.at(-1)?.messages[2]?.content).toMatch(/Done so far:\n- call lookup\(\{"id":1\}\)/);
  });
});
