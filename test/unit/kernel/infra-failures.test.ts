// Tool calls that fail because what they depend on is down (a transient ToolError outlasting its retries) are not
// the model's mistakes: they never reach the model or the repeat detector, they are run again after a wait, and an
// outage that outlasts the waits ends the attempt retryable with the calls unfinished, so the next attempt runs
// them again instead of replaying a failure.
import { observationsIn } from '../../../src/testing/transcript.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunState } from '../../../src/kernel/types.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../../../src/testing/scripted-model-server.js';
import { runWith, type ToolLog } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

/** A model that calls `flaky` again as long as the last observation is an error, and answers once it is not. */
const persistent = (request: RecordedRequest) => {
  const last = request.messages.at(-1) as { role: string; content?: string } | undefined;
  const failed = last?.role === 'tool' && /error/i.test(last.content ?? '');
  const started =
    request.messages.some((m: { role: string }) => m.role === 'assistant') ||
    observationsIn(request.messages).length > 0;
  if (!started || failed) return { actions: [{ tool: 'flaky', args: {} }] };
  return { answer: 'flaky answered' };
};

const FAST = { toolTransientRetries: 0, infraRetryBaseDelayMs: 5 };

it('the same call failing for infrastructure reasons is run again, never shown to the model, never a repeat', async () => {
  server.reset({ rules: [persistent] });
  const before = server.requests.length;
  const log: ToolLog = { executions: [], flaky: { failuresLeft: 3 } };
  const run = await runWith(server, { log, options: FAST });

  expect(run.result).toMatchObject({ status: 'succeeded', answer: 'flaky answered', steps: 2, error: null });
  // The decision once, the answer once: no model call was spent on the outage.
  expect(server.requests.length - before).toBe(2);
  expect(log.executions.filter((e) => e.tool === 'flaky')).toHaveLength(4);
  expect(run.traces[0]!.actions).toMatchObject([{ tool: 'flaky', ok: true, errorCode: null }]);
  expect(server.failures).toEqual([]);
});

it('only the calls that failed for infrastructure reasons are run again', async () => {
  server.reset({
    script: [
      {
        actions: [
          { tool: 'peek', args: { key: 'a' } },
          { tool: 'flaky', args: {} },
        ],
      },
      { answer: 'both done' },
    ],
  });
  const log: ToolLog = { executions: [], flaky: { failuresLeft: 2 } };
  const run = await runWith(server, { log, options: FAST });
  expect(run.result).toMatchObject({ status: 'succeeded', answer: 'both done' });
  expect(log.executions.map((e) => e.tool)).toEqual(['peek', 'flaky', 'flaky', 'flaky']);
});

it('an outage that outlasts the waits ends the attempt retryable; the resumed attempt runs the call again', async () => {
  server.reset({ rules: [persistent] });
  const before = server.requests.length;
  const log: ToolLog = { executions: [], flaky: { failuresLeft: 1_000 } };
  const first = await runWith(server, { log, options: { ...FAST, infraRetries: 2 } });

  expect(first.result).toMatchObject({
    status: 'failed',
    stopReason: 'error',
    error: { kind: 'tool', code: 'tool_unavailable', retryable: true },
  });
  expect(server.requests.length - before).toBe(1);
  expect(log.executions).toHaveLength(3); // the first try and two rounds
  // The last checkpoint keeps the model's decision with the call unfinished, and no result to replay.
  const last: RunState = first.checkpoints.at(-1)!;
  expect(last.result).toBeNull();
  expect(last.pending?.results).toEqual([null]);
  expect(last.suspendedAt).toEqual(expect.any(Number));

  // The outage is over: the next attempt runs the call and asks the model only for what comes after it.
  log.flaky.failuresLeft = 0;
  const resumed = await runWith(server, { log, checkpoint: last, options: FAST });
  expect(resumed.result).toMatchObject({ status: 'succeeded', answer: 'flaky answered', steps: 2 });
  expect(server.requests.length - before).toBe(2);
  expect(resumed.traces.map((t) => t.step)).toEqual([1, 2]);
  expect(server.failures).toEqual([]);
});

it('the time between an attempt that ended retryable and its resume is not charged to the deadline', async () => {
  server.reset({ script: [{ answer: 'still in time' }] });
  const now = Date.now();
  // Started a minute ago with a 30 s deadline, but suspended for all but 1 s of that minute.
  const checkpoint: RunState = {
    version: 1,
    runId: 'run-1',
    task: 'anything',
    protocol: 'tools',
    budget: { maxSteps: 8, maxTokens: 50_000, maxCostUsd: 0.05, deadlineMs: 30_000 },
    startedAt: now - 60_000,
    suspendedAt: now - 59_000,
    history: [],
    summary: null,
    usage: { promptTokens: 0, completionTokens: 0 },
    steps: 0,
    toolCalls: 0,
    modelCalls: 0,
    pending: null,
    repeat: { signature: null, count: 0 },
    result: null,
  };
  const run = await runWith(server, { checkpoint });
  expect(run.result).toMatchObject({ status: 'succeeded', answer: 'still in time' });
  expect(run.checkpoints.at(-1)!.suspendedAt).toBeUndefined();
});
