// The run's memory at its limits, with the budget's answer given: what the context share needs is cleared for good,
// what the budget alone asked for only when it buys a step.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/kernel/messages.js';
import { RunMemory, type FoldHooks } from '../../../src/kernel/run-memory.js';
import { countMessageTokens, tokenCounterFor } from '../../../src/kernel/tokens.js';
import type { RunState } from '../../../src/kernel/types.js';

const count = tokenCounterFor('gpt-4o');
const PRICE = { inputPerMillion: 10, outputPerMillion: 30 };

/** Turns (four by default), each one call with a result of about 400 tokens. */
function stateWithResults(turns = 4): RunState {
  const history: ChatMessage[] = [];
  for (let i = 1; i <= turns; i++) {
    const id = `call_${i}`;
    history.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'big', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: id, content: `row${i} `.repeat(200) },
    );
  }
  return {
    version: 1,
    runId: 'run-1',
    task: 'Read the rows.',
    protocol: 'tools',
    budget: { maxSteps: 10, maxTokens: 100_000, maxCostUsd: 1, deadlineMs: 30_000 },
    price: PRICE,
    startedAt: 0,
    history,
    summary: null,
    usage: { promptTokens: 0, completionTokens: 0 },
    steps: 4,
    toolCalls: 4,
    modelCalls: 4,
    pending: null,
    repeat: { signature: null, count: 0 },
    result: null,
  };
}

function memoryOf(state: RunState, contextTokens: number): RunMemory {
  return new RunMemory({
    state,
    pinned: [
      { role: 'system', content: 'You read rows.' },
      { role: 'user', content: state.task },
    ],
    window: 'auto',
    contextTokens,
    completionTokens: 64,
    requestTools: () => undefined,
    estimate: (messages) => messages.reduce((sum, m) => sum + countMessageTokens(m, count), 0),
    count,
    price: () => PRICE,
    budget: () => state.budget,
  });
}

const tokensOf = (messages: readonly ChatMessage[]) =>
  messages.reduce((sum, m) => sum + countMessageTokens(m, count), 0);

const hooks = (affordable: () => boolean): FoldHooks => ({
  stepAffordable: affordable,
  summarize: () => Promise.reject(new Error('no summary calls under auto')),
});

describe('RunMemory at the limits', () => {
  it('a result cleared for the context share stays cleared when the budget cannot pay for a step either', async () => {
    const state = stateWithResults();
    const memory = memoryOf(state, 1_800);
    const share = 1_800 * 0.8;
    expect(tokensOf(memory.prompt()) + 64).toBeGreaterThan(share);
    const change = await memory.fold(hooks(() => false));
    // The prompt the final turn starts from fits the share: the results the context needed gone stay gone.
    expect(tokensOf(memory.prompt()) + 64).toBeLessThanOrEqual(share);
    expect(change?.events).toEqual([expect.objectContaining({ type: 'clear', tools: ['big'] })]);
    const cleared = state.history.filter((m) => m.role === 'tool' && m.content.startsWith('[cleared'));
    expect(cleared.length).toBeGreaterThan(0);
    // And never more than the context needed: the latest results are there in full for the final answer.
    expect(state.history.at(-1)).toMatchObject({ role: 'tool', content: expect.stringMatching(/^row4 /) });
    expect(state.history[5]).toMatchObject({ role: 'tool', content: expect.stringMatching(/^row3 /) });
  });

  it('results cleared for the budget alone come back when clearing them does not buy a step', async () => {
    const state = stateWithResults();
    const memory = memoryOf(state, 128_000);
    const before = structuredClone(state.history);
    expect(await memory.fold(hooks(() => false))).toBeNull();
    expect(state.history).toEqual(before);
  });

  it('results cleared for the budget stay when that buys the step', async () => {
    const state = stateWithResults();
    const memory = memoryOf(state, 128_000);
    const affordable = () => tokensOf(memory.prompt()) < 1_000;
    const change = await memory.fold(hooks(affordable));
    expect(affordable()).toBe(true);
    expect(change?.events).toEqual([expect.objectContaining({ type: 'clear' })]);
  });

  it('clearing many results asks a few times whether the step fits, and clears the fewest that make it fit', async () => {
    const state = stateWithResults(400);
    const original = structuredClone(state.history);
    const memory = memoryOf(state, 10_000_000);
    let asked = 0;
    const affordable = () => {
      asked++;
      return tokensOf(memory.prompt()) < 60_000;
    };
    const change = await memory.fold(hooks(affordable));
    // Before, once per result cleared (about 260 here), each estimating the whole prompt.
    expect(asked).toBeLessThan(40);
    const cleared = state.history.flatMap((m, i) =>
      m.role === 'tool' && m.content.startsWith('[cleared') ? [i] : [],
    );
    expect(change?.events).toEqual([expect.objectContaining({ type: 'clear', results: cleared.length })]);
    expect(cleared.length).toBeGreaterThan(200);
    // The oldest ones, and not one more than needed: with the last of them back, the step does not fit.
    expect(cleared).toEqual(Array.from({ length: cleared.length }, (_, i) => 2 * i + 1));
    expect(affordable()).toBe(true);
    state.history[cleared.at(-1)!] = original[cleared.at(-1)!]!;
    expect(affordable()).toBe(false);
  });
});

describe('the compact prompt the final turn falls back to', () => {
  it('is made once for the same messages and summary, and again once either changes', () => {
    const state = stateWithResults(2);
    const memory = memoryOf(state, 100_000);
    const first = memory.compactPrompt(false)!;
    // Asked before every step: the same messages give the very same summary, not one built again.
    expect(memory.compactPrompt(false)!.summary).toBe(first.summary);

    memory.recordTurn([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'next', arguments: '{"n":3}' } }],
      },
      { role: 'tool', tool_call_id: 'call_3', content: 'three' },
    ]);
    const afterTurn = memory.compactPrompt(false)!;
    expect(afterTurn.summary).not.toBe(first.summary);
    expect(afterTurn.summary.content).toContain('I called next({"n":3})');

    // A result cleared in place is a new message at the same index: the summary says it was cleared.
    const [tool] = state.history.splice(1, 1, { role: 'tool', tool_call_id: 'call_1', content: 'x' });
    expect(tool).toBeDefined();
    const afterClear = memory.compactPrompt(false)!;
    expect(afterClear.summary).not.toBe(afterTurn.summary);

    state.summary = 'I looked at the rows.';
    const afterSummary = memory.compactPrompt(false)!;
    expect(afterSummary.summary).not.toBe(afterClear.summary);
    expect(afterSummary.summary.content).toContain('I looked at the rows.');
  });
});
