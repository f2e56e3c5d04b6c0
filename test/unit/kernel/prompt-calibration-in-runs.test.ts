// The prompt estimate against an endpoint that counts the tool calls of the history above the documented count:
// a squeezed final turn stays under the cap, the run learns what the endpoint adds, and a resumed run plans with
// what the run it continues had learnt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNCALIBRATED } from '../../../src/kernel/prompt-calibration.js';
import type { RunState } from '../../../src/kernel/types.js';
import {
  startScriptedModel,
  type ReplyRule,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

const LONG_ANSWER = 'The best answer from what is known so far. '.repeat(120);

const lookups = (ids: number[]): ScriptedReply => ({
  actions: ids.map((id) => ({ tool: 'lookup', args: { id } })),
});

/** Three lookups a step while tools are offered; then an answer as long as max_tokens allows. */
const untilTheFinalTurn: ReplyRule = (request) =>
  request.tools ? lookups([request.index, 2, 3]) : { answer: LONG_ANSWER };

describe('prompt calibration', () => {
  it('a squeezed final turn after three tool calls stays under the cap when the endpoint counts them higher', async () => {
    // The case: the endpoint adds 6 tokens a call, and the final turn, its max_tokens cut to what was
    // left, ended at $0.00905 against $0.009 on the previous estimate. A server of its own: the tool call ids,
    // and so the counts, depend on how many requests it has seen.
    const own = await startScriptedModel({
      script: [lookups([1, 2, 3])],
      rules: [() => ({ answer: LONG_ANSWER })],
      promptCounting: { extraTokensPerToolCall: 6 },
    });
    try {
      const { result } = await runWith(own, {
        budget: { maxSteps: 2, maxTokens: 5_000, maxCostUsd: 0.009 },
        options: { memoryWindow: 4, completionTokens: 73, toolResultMaxTokens: 50 },
      });
      expect(result).toMatchObject({ status: 'stopped', stopReason: 'max_steps', steps: 2 });
      expect(result.answer).toBeTruthy();
      expect(result.usage.costUsd).toBeLessThanOrEqual(0.009);
    } finally {
      await own.close();
    }
  });

  it('an endpoint that counts as documented teaches nothing but that: runs plan with the bound alone', async () => {
    server.reset({ script: [lookups([1, 2]), lookups([3])], rules: [() => ({ answer: 'done' })] });
    const { result, checkpoints } = await runWith(server);
    expect(result.status).toBe('succeeded');
    expect(checkpoints.length).toBeGreaterThan(0);
    // The second prompt, with the first turn's two calls in it, was reported as documented.
    expect(checkpoints.at(-1)!.promptCalibration).toEqual({ ...UNCALIBRATED, toolCallsReported: true });
    for (const state of checkpoints) {
      const { toolCallsReported: _, ...learnt } = state.promptCalibration ?? UNCALIBRATED;
      expect(learnt).toEqual(UNCALIBRATED);
    }
  });

  it('the run learns what the endpoint adds, and a resumed run plans with it', async () => {
    const budget = { maxSteps: 4, maxTokens: 1_600, maxCostUsd: 1 };
    // The sliding window keeps the tool calls in the prompt, where the endpoint counts them its own way.
    const options = { memoryWindow: 6, completionTokens: 400, toolResultMaxTokens: 50 };
    const counting = { serializedToolCalls: true, extraTokensPerToolCall: 8 };
    server.reset({ rules: [untilTheFinalTurn], promptCounting: counting });
    const before = server.requests.length;
    const original = await runWith(server, { budget, options });
    const finalRequest = server.requests.at(-1)!;
    expect(finalRequest.tools).toBeUndefined();
    expect(original.result.usage.totalTokens).toBeLessThanOrEqual(budget.maxTokens);
    expect(server.requests.length - before).toBe(original.result.steps);

    // The state after the last tool step, before the final turn.
    const last = original.checkpoints.findLast(
      (state: RunState) => state.pending === null && state.result === null,
    );
    expect(last?.steps).toBe(original.result.steps - 1);
    expect(last?.promptCalibration?.extraPerToolCall).toBeGreaterThan(0);

    server.reset({ rules: [untilTheFinalTurn], promptCounting: counting });
    const resumed = await runWith(server, { budget, options, checkpoint: last });
    expect(server.requests.at(-1)!.body.max_tokens).toBe(finalRequest.body.max_tokens);
    expect(resumed.result.usage).toEqual(original.result.usage);

    // Without what it had learnt, the resumed run would plan the squeezed turn larger: the checkpoint is what
    // keeps it the same.
    server.reset({ rules: [untilTheFinalTurn], promptCounting: counting });
    const forgetful: RunState = { ...last!, promptCalibration: undefined };
    await runWith(server, { budget, options, checkpoint: forgetful });
    expect(server.requests.at(-1)!.body.max_tokens).toBeGreaterThan(finalRequest.body.max_tokens);
  });
});
