// The memory in runs. The default keeps the whole transcript as the model wrote it, append-only, and cuts it only at
// the limits, keeping every role. The sliding window: pinned system prompt and task, a bounded verbatim window, a
// rolling summary written by the model (and paid for) as an assistant message, never a result separated from its
// call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/kernel/messages.js';
import { isSummaryRequest } from '../../../src/kernel/memory.js';
import { observationsIn, turnsIn } from '../../../src/testing/transcript.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

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
      const hasSummary = String(request.messages[2]?.content).startsWith('Summary of my earlier steps:');
      if (hasSummary) expect(request.messages[2]?.role).toBe('assistant');
      const window = request.messages.slice(hasSummary ? 3 : 2);
      const lastTurn = window.length - window.findLastIndex((m) => m.role === 'assistant');
      expect(window.length).toBeLessThanOrEqual(Math.max(4, lastTurn));
    }
    // The model's summary is what later steps see (later small folds are appended to it), and its tokens
    // are on the bill.
    expect(steps.at(-1)?.messages[2]?.content).toMatch(
      /^Summary of my earlier steps:\n[^]*Done: \d+ steps of work/,
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
    expect(last.messages[2]).toMatchObject({ role: 'assistant' });
    expect(last.messages[2]?.content).toMatch(
      /^Summary of my earlier steps:\n- I called big\(\{\}\) → result of \d+ tokens, not kept/,
    );
    // The summary is the model's calls, never their results' text.
    expect(last.messages[2]?.content).not.toMatch(/row row/);
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
    expect(requests.at(-1)?.messages[2]?.content).toMatch(
      /^Summary of my earlier steps:\n- I called lookup\(\{"id":1\}\)/,
    );
  });
});

describe('auto memory (the default): the native transcript', () => {
  const LOOKUPS = [1, 2, 3, 4, 5, 6, 7, 8].map((id) => [{ tool: 'lookup', args: { id } }]);
  // Long instructions put the stable prefix over the provider's 1,024-token caching minimum.
  const INSTRUCTIONS = Array.from({ length: 120 }, (_, i) => `Rule ${i}: keep customer records exact.`).join(
    '\n',
  );

  it('each prompt extends the previous one, keeps every result in its tool message, and is served from the cache', async () => {
    const own = await startScriptedModel({ promptCache: true, rules: [plannedModel(LOOKUPS)] });
    try {
      const { result } = await runWith(own, {
        instructions: INSTRUCTIONS,
        budget: { maxCostUsd: 1, maxSteps: 12 },
      });
      expect(result).toMatchObject({ status: 'succeeded', steps: 9 });
      const requests = own.requests;
      for (let k = 1; k < requests.length; k++) {
        const previous = requests[k - 1]!.messages;
        const current = requests[k]!.messages;
        // The previous prompt whole, then the model's turn and its result.
        expect(current.slice(0, previous.length)).toEqual(previous);
        expect(current.slice(previous.length).map((m) => m.role)).toEqual(['assistant', 'tool']);
        expect(requests[k]!.usage?.cachedPromptTokens).toBeGreaterThanOrEqual(1_024);
      }
      // Every result the run obtained is still in front of the model at the end, whole.
      const seen = observationsIn(requests.at(-1)!.messages).join('\n');
      for (let id = 1; id <= 8; id++) expect(seen).toContain(`customer-${id}`);
      // One cache key for the agent, sent with every call.
      const keys = new Set(requests.map((r) => r.body.prompt_cache_key));
      expect(keys.size).toBe(1);
      expect([...keys][0]).toMatch(/^agent-[0-9a-f]{24}$/);
    } finally {
      await own.close();
    }
  });

  it('the runs of one agent share a cache key; another agent (other instructions) has its own', async () => {
    const keyOf = async (instructions: string) => {
      server.reset({ script: [{ answer: 'ok' }] });
      await runWith(server, { instructions });
      return server.requests.at(-1)!.body.prompt_cache_key as string;
    };
    expect(await keyOf('Agent A.')).toBe(await keyOf('Agent A.'));
    expect(await keyOf('Agent B.')).not.toBe(await keyOf('Agent A.'));
  });

  it('a failed call and its error stay in the transcript as they were, next to the corrected one', async () => {
    server.reset({
      rules: [plannedModel([[{ tool: 'nope', args: { id: 1 } }], [{ tool: 'lookup', args: { id: 1 } }]])],
    });
    const before = server.requests.length;
    const { result } = await runWith(server);
    expect(result).toMatchObject({ status: 'succeeded', steps: 3 });
    const [, second, third] = server.requests.slice(before);
    expect(second!.messages.at(-2)).toMatchObject({ role: 'assistant' });
    expect(second!.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringMatching(/Unknown tool "nope"/),
    });
    expect(third!.messages.slice(0, second!.messages.length)).toEqual(second!.messages);
    expect(observationsIn(third!.messages)).toEqual([
      expect.stringMatching(/Unknown tool "nope"/),
      expect.stringMatching(/customer-1/),
    ]);
  });

  it('at the context limit the oldest results are cleared in place: their calls stay, each still answered', async () => {
    // Each big result between two small calls (the same call three times in a row would end the run).
    const bigs = Array.from({ length: 7 }, (_, i) =>
      i % 2 === 0 ? [{ tool: 'big', args: {} }] : [{ tool: 'add', args: { a: i, b: i } }],
    );
    server.reset({ rules: [plannedModel(bigs)] });
    const before = server.requests.length;
    const { result, traces } = await runWith(server, {
      budget: { maxCostUsd: 1, maxSteps: 10 },
      options: { contextTokens: 2_500, toolResultMaxTokens: 400, completionTokens: 64 },
    });
    expect(result).toMatchObject({ status: 'succeeded', steps: 8 });
    const requests = server.requests.slice(before);
    const last = requests.at(-1)!.messages;
    expectPairsIntact(last);
    expect(last.filter((m) => m.role === 'assistant')).toHaveLength(7);
    const tools = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(tools).toHaveLength(7);
    expect(tools[0]).toMatch(
      /^\[cleared to save context: the result of big, \d+ tokens; call it again if needed\]$/,
    );
    expect(tools.at(-1)).toMatch(/^row row/);
    // Only what had to go went: the prompt stays under the share of the context the memory keeps to.
    for (const request of requests) expect(request.usage!.promptTokens + 64).toBeLessThanOrEqual(2_000);
    const clears = traces.flatMap((t) => (t.events ?? []).filter((e) => e.type === 'clear'));
    expect(clears.length).toBeGreaterThan(0);
    expect(clears[0]).toMatchObject({ type: 'clear', tools: ['big'] });
    // No result's text ever outside a tool message.
    for (const request of requests) {
      for (const message of request.messages) {
        if (message.role !== 'tool') expect(String(message.content)).not.toMatch(/row row/);
      }
    }
  });

  it('results are cleared for the budget only when that buys a step; otherwise the final turn still sees them', async () => {
    const plan = [
      [{ tool: 'big', args: {} }],
      ...[1, 2, 3, 4, 5].map((id) => [{ tool: 'lookup', args: { id } }]),
    ];
    let cleared = 0;
    let keptForFinal = 0;
    for (let maxTokens = 1_500; maxTokens <= 4_000; maxTokens += 100) {
      server.reset({ rules: [plannedModel(plan)] });
      const before = server.requests.length;
      const { result, traces } = await runWith(server, {
        budget: { maxTokens, maxCostUsd: 1 },
        options: { toolResultMaxTokens: 400, completionTokens: 64 },
      });
      expect(result.usage.totalTokens).toBeLessThanOrEqual(maxTokens);
      for (const trace of traces) {
        if (!trace.events?.some((e) => e.type === 'clear')) continue;
        cleared++;
        // The clearing bought the step it was made for.
        expect(trace.kind).not.toBe('final');
      }
      const final = server.requests.slice(before).find((r) => r.tools === undefined);
      if (final?.messages.some((m) => m.role === 'tool' && m.content.startsWith('row row'))) keptForFinal++;
    }
    expect(keptForFinal).toBeGreaterThan(0);
    expect(cleared).toBeGreaterThan(0);
  });

  it('a resumed run clears for the budget at the prices it started with, not at those it is given now', async () => {
    const plan = [
      [{ tool: 'big', args: {} }],
      ...[1, 2, 3, 4, 5].map((id) => [{ tool: 'lookup', args: { id } }]),
    ];
    // Decides from its own turns, so a resumed run is asked what the uninterrupted one was.
    const fromOwnTurns = (request: RecordedRequest) => {
      const actions = plan[turnsIn(request.messages)];
      return actions ? { actions } : { answer: `finished ${plan.length} steps` };
    };
    const options = { toolResultMaxTokens: 400, completionTokens: 64 };
    let compared = 0;
    for (let maxCostUsd = 0.02; maxCostUsd <= 0.06; maxCostUsd += 0.0025) {
      server.reset({ rules: [fromOwnTurns] });
      const before = server.requests.length;
      const whole = await runWith(server, { budget: { maxCostUsd }, options });
      const clearedAt = whole.traces.findIndex((t) => t.events?.some((e) => e.type === 'clear'));
      if (clearedAt < 1) continue;
      const wholeRequests = server.requests.slice(before);
      // Resumed after its first step by a worker whose price table now says the model is free (a default model
      // changed, a table updated): the run still plans, and clears, at the prices it began with.
      const saved = whole.checkpoints.find((c) => c.steps === 1 && c.pending === null)!;
      const resumedFrom = server.requests.length;
      const resumed = await runWith(server, {
        checkpoint: saved,
        price: { inputPerMillion: 0, outputPerMillion: 0 },
        budget: { maxCostUsd },
        options,
      });
      expect(resumed.result).toMatchObject({
        stopReason: whole.result.stopReason,
        steps: whole.result.steps,
      });
      // The same requests, but for the ids the server gave each call (they carry its request count).
      const sent = (requests: RecordedRequest[]) =>
        requests.map((r) => JSON.stringify(r.messages).replace(/call_\d+_/g, 'call_'));
      expect(sent(server.requests.slice(resumedFrom))).toEqual(sent(wholeRequests.slice(1)));
      compared++;
    }
    expect(compared).toBeGreaterThan(0);
  });

  it('a final-turn reply that is a tool call written as text is never the answer', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 4 } }] },
        { text: '{"tool": "lookup", "args": {"id": 5}}' },
      ],
    });
    const { result } = await runWith(server, { budget: { maxSteps: 2 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'max_steps', steps: 2 });
    expect(result.answer).not.toMatch(/"tool"/);
    // What the run did stands in: the tool that ran and what it returned.
    expect(result.answer).toMatch(/^No final answer was written \(the run stopped: max_steps\)/);
    expect(result.answer).toMatch(/call lookup\(\{"id":4\}\)\nresult: .*customer-4/);
  });

  it('a step is only made when a final turn can still be paid after it: every run that acted answers, no budget is passed', async () => {
    let finalTurns = 0;
    for (let maxTokens = 600; maxTokens <= 1_600; maxTokens += 25) {
      server.reset({ rules: [plannedModel([[{ tool: 'big', args: {} }]])] });
      const { result, traces } = await runWith(server, {
        budget: { maxTokens, maxCostUsd: 1 },
        options: { toolResultMaxTokens: 400, completionTokens: 64 },
      });
      expect(result.usage.totalTokens).toBeLessThanOrEqual(maxTokens);
      if (result.toolCalls > 0) expect(result.answer).toBe('finished 1 steps');
      if (traces.some((t) => t.kind === 'final')) finalTurns++;
    }
    expect(finalTurns).toBeGreaterThan(0);
  });
});
