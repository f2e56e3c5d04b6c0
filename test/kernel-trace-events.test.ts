// The step traces tell the run console what the loop decided beyond its calls: memory folds with the summary
// the next prompts carry, and the final tool-less turn with its reason (StepTrace.events).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSummaryRequest } from '../src/kernel/memory.js';
import type { TraceEvent } from '../src/kernel/types.js';
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

const PLAN = [
  [{ tool: 'big', args: {} }],
  [
    { tool: 'lookup', args: { id: 1 } },
    { tool: 'lookup', args: { id: 2 } },
  ],
  [{ tool: 'add', args: { a: 1, b: 1 } }],
  [{ tool: 'big', args: {} }],
  [{ tool: 'add', args: { a: 2, b: 2 } }],
];

function plannedModel() {
  let step = 0;
  return (request: RecordedRequest) => {
    if (isSummaryRequest(request.messages)) return { text: 'Done: the lookups. Goal: add the numbers.' };
    if (request.tools === undefined) return { answer: 'best answer so far' };
    const actions = PLAN[step++];
    return actions ? { actions } : { answer: 'finished' };
  };
}

describe('trace events', () => {
  it('reports each memory fold with its summary and the model calls it cost', async () => {
    server.reset({ rules: [plannedModel()] });
    const before = server.requests.length;
    const { result, traces } = await runWith(server, {
      budget: { maxCostUsd: 1 },
      options: { memoryWindow: 4, toolResultMaxTokens: 700 },
    });
    expect(result.status).toBe('succeeded');
    const folds = traces
      .flatMap((t) => t.events ?? [])
      .filter((e): e is TraceEvent & { type: 'fold' } => e.type === 'fold');
    expect(folds.length).toBeGreaterThan(0);
    const byModel = folds.filter((fold) => fold.byModel);
    expect(byModel.length).toBeGreaterThan(0);
    expect(byModel[0]?.summary).toContain('Done: the lookups.');
    for (const fold of folds) {
      expect(fold.messages).toBeGreaterThan(0);
      // A summary the model wrote is paid for, and says what it cost; a deterministic one costs nothing.
      if (fold.modelCalls > 0)
        expect(fold.promptTokens * fold.completionTokens * fold.costUsd).toBeGreaterThan(0);
      else expect([fold.promptTokens, fold.completionTokens, fold.costUsd]).toEqual([0, 0, 0]);
    }
    const summaries = server.requests.slice(before).filter((r) => isSummaryRequest(r.messages));
    expect(folds.reduce((sum, fold) => sum + fold.modelCalls, 0)).toBe(summaries.length);
    // A trace carries the events since the previous one only: none is reported twice.
    expect(traces.filter((t) => t.events?.length === 0)).toEqual([]);
  });

  it('reports the final tool-less turn and why it was made', async () => {
    server.reset({ rules: [plannedModel()] });
    const { result, traces } = await runWith(server, { budget: { maxSteps: 2, maxCostUsd: 1 } });
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'max_steps',
      answer: 'best answer so far',
    });
    const last = traces.at(-1)!;
    expect(last.kind).toBe('final');
    expect(last.events).toEqual([
      { type: 'final_turn', reason: 'max_steps', why: 'This is your last step.' },
    ]);
    expect(traces.slice(0, -1).every((t) => t.events === undefined)).toBe(true);
  });
});
