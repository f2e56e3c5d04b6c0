// Resume: given the state handed to the checkpoint callback at any point of a 6-step run, a new run goes on
// from there and ends with the same result, repeating no finished model call and no finished tool call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunState } from '../src/kernel/types.js';
import { StoreError } from '../src/kernel/errors.js';
import {
  startScriptedModel,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../src/testing/scripted-model-server.js';
import { runWith, type RunRecord } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

// Six model calls: five steps of tool calls (one of them three calls at once, one invalid) and the answer.
const SCRIPT: ScriptedReply[] = [
  { actions: [{ tool: 'lookup', args: { id: 1 } }] },
  {
    actions: [
      { tool: 'lookup', args: { id: 2 } },
      { tool: 'add', args: { a: 1, b: 2 } },
      { tool: 'lookup', args: { id: 3 } },
    ],
  },
  { actions: [{ tool: 'flaky', args: {} }] },
  { actions: [{ tool: 'nope', args: {} }] },
  { actions: [{ tool: 'add', args: { a: 3, b: 4 } }] },
  { answer: 'customers 1, 2, 3; sums 3 and 7' },
];

/** The call keys whose tool calls had finished when the checkpoint was taken. */
function finishedCallKeys(state: RunState, original: RunRecord): Set<string> {
  const keys = new Set<string>();
  const completedSteps = state.pending ? state.steps - 1 : state.steps;
  for (const execution of original.log.executions) {
    const step = Number(execution.callKey.split(':')[1]);
    if (step <= completedSteps) keys.add(execution.callKey);
  }
  const executed = new Set(original.log.executions.map((e) => e.callKey));
  state.pending?.results.forEach((result, i) => {
    const key = `${state.runId}:${state.steps}:${i + 1}`;
    // An unknown tool finishes without executing anything.
    if (result && executed.has(key)) keys.add(key);
  });
  return keys;
}

/**
 * Resumes from `checkpoint` with the rest of the script: the same result as the original run, and exactly the
 * model calls it had not made yet.
 */
async function resumeFrom(
  checkpoint: RunState,
  script: ScriptedReply[],
  original: RunRecord,
  protocol: 'tools' | 'json',
): Promise<RunRecord> {
  server.reset({ script: script.slice(checkpoint.modelCalls) });
  const before = server.requests.length;
  const resumed = await runWith(server, { protocol, checkpoint });
  expect(resumed.result).toEqual(original.result);
  expect(server.requests.length - before).toBe(script.length - checkpoint.modelCalls);
  expect(server.failures).toEqual([]);
  return resumed;
}

describe.each(['tools', 'json'] as const)('resume (%s protocol)', (protocol) => {
  it('from every checkpoint of a 6-step run gives the same result with no repeated call', async () => {
    server.reset({ script: SCRIPT });
    const original = await runWith(server, { protocol });
    expect(original.result).toMatchObject({ status: 'succeeded', steps: 6, toolCalls: 7 });
    const allKeys = original.log.executions.map((e) => e.callKey);
    expect(new Set(allKeys).size).toBe(allKeys.length);
    // After each model call, after each tool call, after each memory fold, and at the end.
    expect(original.checkpoints.length).toBeGreaterThanOrEqual(12);

    for (const checkpoint of original.checkpoints) {
      const resumed = await resumeFrom(checkpoint, SCRIPT, original, protocol);
      const finished = finishedCallKeys(checkpoint, original);
      const redone = resumed.log.executions.map((e) => e.callKey);
      expect(redone.filter((key) => finished.has(key))).toEqual([]);
      expect(new Set([...finished, ...redone])).toEqual(new Set(allKeys));
    }
  });
});

describe.each(['tools', 'json'] as const)('write-ahead checkpoints (%s protocol)', (protocol) => {
  // peek is read-only, lookup may have side effects (it is not marked read-only), nope is unknown.
  const script: ScriptedReply[] = [
    { actions: [{ tool: 'peek', args: { key: 'a' } }] },
    {
      actions: [
        { tool: 'peek', args: { key: 'b' } },
        { tool: 'nope', args: {} },
      ],
    },
    {
      actions: [
        { tool: 'peek', args: { key: 'c' } },
        { tool: 'lookup', args: { id: 4 } },
      ],
    },
    { answer: 'done' },
  ];

  it('are taken only before calls that may have side effects, and every checkpoint still resumes', async () => {
    server.reset({ script });
    const original = await runWith(server, { protocol });
    expect(original.result).toMatchObject({ status: 'succeeded', steps: 4, toolCalls: 5 });
    const pendingCalls = original.checkpoints
      .filter((state) => state.pending !== null)
      .map((state) => state.pending!.calls.map((call) => call.name));
    // Only step 3's turn, with lookup in it: once before its tools ran, once between its two calls.
    expect(pendingCalls.length).toBeGreaterThanOrEqual(1);
    for (const names of pendingCalls) expect(names).toEqual(['peek', 'lookup']);
    const writeAhead = original.checkpoints.find((state) => state.pending?.results.every((r) => r === null));
    expect(writeAhead?.steps).toBe(3);

    for (const checkpoint of original.checkpoints) {
      // No model call is asked twice: a read-only turn whose tools answer at once is never checkpointed half-way.
      const resumed = await resumeFrom(checkpoint, script, original, protocol);
      // The side effect is made again only when the checkpoint came before it finished, and then with the same
      // call key (the decision was saved), which is what keeps it at most once.
      const lookups = resumed.log.executions.filter((e) => e.tool === 'lookup').map((e) => e.callKey);
      const lookupDone =
        checkpoint.steps > 3 || (checkpoint.steps === 3 && checkpoint.pending?.results[1] !== null);
      expect(lookups).toEqual(lookupDone ? [] : ['run-1:3:2']);
    }
  });
});

describe('read-only turns and side effects', () => {
  it('a read-only turn whose tools outlast the event loop turn is saved, with what its call cost', async () => {
    server.reset({
      script: [{ actions: [{ tool: 'peek', args: { key: 'a', ms: 80 } }] }, { answer: 'done' }],
    });
    const { result, checkpoints } = await runWith(server);
    expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
    const during = checkpoints.filter((state) => state.pending !== null);
    expect(during).toHaveLength(1);
    expect(during[0]).toMatchObject({ steps: 1, modelCalls: 1, pending: { results: [null] } });
    expect(during[0]!.usage.promptTokens).toBeGreaterThan(0);
  });

  it('beforeSideEffects is awaited before a tool with side effects, and its failure ends the run first', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'peek', args: { key: 'a' } }] },
        { actions: [{ tool: 'lookup', args: { id: 1 } }] },
        { answer: 'done' },
      ],
    });
    let asked = 0;
    const { result, log } = await runWith(server, {
      beforeSideEffects: async () => {
        asked++;
        throw new StoreError('store_unavailable', 'The run could not be recorded: connect ECONNREFUSED', {
          retryable: true,
        });
      },
    });
    // Asked once, before lookup (not before the read-only peek); lookup never ran.
    expect(asked).toBe(1);
    expect(log.executions.map((e) => e.tool)).toEqual(['peek']);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', steps: 2 });
    expect(result.error).toMatchObject({ code: 'store_unavailable', retryable: true });
  });
});

describe('resume details', () => {
  it('keeps the original start, so the deadline counts from the first attempt', async () => {
    server.reset({ script: SCRIPT });
    const first = await runWith(server);
    const checkpoint = { ...first.checkpoints[0]!, startedAt: Date.now() - 60_000 };
    server.reset({ script: [] });
    const resumed = await runWith(server, { checkpoint, budget: { deadlineMs: 30_000 } });
    expect(resumed.result).toMatchObject({ status: 'stopped', stopReason: 'deadline' });
  });

  it('a checkpoint is plain JSON', async () => {
    server.reset({ script: SCRIPT });
    const { checkpoints } = await runWith(server);
    for (const state of checkpoints) expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });
});

describe('open and closed states', () => {
  it('a run failed by a retryable error resumes instead of replaying the failure', async () => {
    server.reset({ script: [SCRIPT[0]!, { fault: 'server_error' }] });
    const failed = await runWith(server, { options: { modelRetries: 0 } });
    expect(failed.result.error).toMatchObject({ retryable: true });
    const last = failed.checkpoints.at(-1)!;
    expect(last.result).toBeNull();
    server.reset({ script: SCRIPT.slice(1) });
    const resumed = await runWith(server, { checkpoint: last });
    expect(resumed.result).toMatchObject({ status: 'succeeded', steps: 6 });
  });

  it('a finished run resumed returns its result without calling the model', async () => {
    server.reset({ script: SCRIPT });
    const done = await runWith(server);
    server.reset({ script: [] });
    const before = server.requests.length;
    const again = await runWith(server, { checkpoint: done.checkpoints.at(-1)! });
    expect(again.result).toEqual(done.result);
    expect(server.requests.length).toBe(before);
  });
});
