// Approvals in the kernel: a turn whose call waits for a person parks the run (its other calls run), and the run
// resumed with the decision runs the call exactly once with the approved arguments, or shows the model who said
// no and why. The transcript stays native across the wait; the wait is not the run's time.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalDecision } from '../../../src/kernel/approval.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { RunState } from '../../../src/kernel/types.js';
import {
  startScriptedModel,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { runWith, testTools, type ToolLog } from '../../support/kernel-harness.js';
import { expectNativeTranscript } from '../../support/native-transcript.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

let log: ToolLog;
/** The requests of this test alone: the server keeps those of earlier tests. */
let sent: () => NonNullable<ScriptedModelServer['requests']>;
beforeEach(() => {
  log = { executions: [], flaky: { failuresLeft: 0 } };
  const first = server.requests.length;
  sent = () => server.requests.slice(first);
});

/** The harness's tools plus `pay`, which asks for approval above 100, and `notify`, which always asks. */
function toolsWithApproval(): ToolRegistry {
  const base = testTools(log).registry;
  const extra = [
    defineTool({
      name: 'pay',
      description: 'Pay an amount to a customer.',
      parameters: z.object({ to: z.string(), amount: z.number().positive(), note: z.string().default('') }),
      needsApproval: ({ amount }) => amount > 100,
      async execute({ to, amount }, ctx) {
        log.executions.push({ tool: 'pay', args: { to, amount }, callKey: ctx.callKey });
        return `paid ${amount} to ${to}`;
      },
    }),
    defineTool({
      name: 'notify',
      description: 'Notify someone.',
      parameters: z.object({ to: z.string() }),
      needsApproval: true,
      readOnly: true,
      async execute({ to }, ctx) {
        log.executions.push({ tool: 'notify', args: { to }, callKey: ctx.callKey });
        return `notified ${to}`;
      },
    }),
    defineTool({
      name: 'shaky',
      description: 'Its approval rule throws.',
      parameters: z.object({}),
      needsApproval: () => {
        throw new Error('rule broke');
      },
      async execute(_args, ctx) {
        log.executions.push({ tool: 'shaky', args: {}, callKey: ctx.callKey });
        return 'shaky ran';
      },
    }),
  ];
  return new ToolRegistry([...base.names.map((n) => base.get(n)!), ...extra]);
}

const TURN: ScriptedReply = {
  actions: [
    { tool: 'lookup', args: { id: 7 } },
    { tool: 'pay', args: { to: 'c7@example.com', amount: 250 } },
    { tool: 'add', args: { a: 2, b: 3 } },
  ],
};
const ANSWER: ScriptedReply = { answer: 'done' };

/** Parks on TURN, then resumes from the parked checkpoint with `decision` for the pay call. */
async function parkThenResume(decision: ApprovalDecision | undefined, now?: () => number) {
  server.reset({ script: [TURN, ANSWER] });
  const tools = toolsWithApproval();
  const parked = await runWith(server, { tools, log, ...(now ? { now } : {}) });
  const checkpoint = parked.checkpoints.at(-1) as RunState;
  const decisions = decision ? { [parked.result.awaitingApproval![0]!.callKey]: decision } : {};
  const resumed = await runWith(server, {
    tools,
    log,
    checkpoint,
    approvals: { decisions },
    ...(now ? { now } : {}),
  });
  return { parked, resumed, checkpoint };
}

describe('a call that needs approval', () => {
  it('parks the run after running the calls of its turn that need none', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const { result, checkpoints } = await runWith(server, { tools: toolsWithApproval(), log });
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'awaiting_approval',
      answer: null,
      steps: 1,
    });
    expect(result.awaitingApproval).toEqual([
      {
        callKey: 'run-1:1:2',
        callId: expect.any(String),
        step: 1,
        tool: 'pay',
        // As the model gave them: the schema's default is filled in when the call runs, not shown as asked.
        arguments: { to: 'c7@example.com', amount: 250 },
        requestedAt: expect.any(Number),
      },
    ]);
    expect(log.executions.map((e) => e.tool).sort()).toEqual(['add', 'lookup']);
    expect(sent()).toHaveLength(1);
    const state = checkpoints.at(-1)!;
    expect(state.result).toBeNull();
    expect(state.suspendedAt).toEqual(expect.any(Number));
    expect(state.pending?.results.map((r) => r?.tool ?? null)).toEqual(['lookup', null, 'add']);
  });

  it('approved: runs once with the arguments asked, and the turn goes back to the model whole', async () => {
    const { resumed } = await parkThenResume({ decision: 'approve', by: 'alice', decidedAt: 1_000 });
    expect(resumed.result).toMatchObject({ status: 'succeeded', answer: 'done', steps: 2, toolCalls: 3 });
    expect(log.executions.filter((e) => e.tool === 'pay')).toEqual([
      { tool: 'pay', args: { to: 'c7@example.com', amount: 250 }, callKey: 'run-1:1:2' },
    ]);
    expect(log.executions.filter((e) => e.tool === 'lookup')).toHaveLength(1);
    // Two model calls in all: the turn was not asked again.
    expect(sent()).toHaveLength(2);
    const toolMessages = sent()[1]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content)).toEqual([
      expect.stringContaining('customer-7'),
      'paid 250 to c7@example.com',
      '5',
    ]);
    expectNativeTranscript(sent());
    const step = resumed.traces.find((t) => t.step === 1)!;
    expect(step.events).toEqual([
      expect.objectContaining({
        type: 'approval',
        tool: 'pay',
        decision: 'approve',
        by: 'alice',
        decidedAt: 1_000,
      }),
    ]);
  });

  it('approved with edited arguments: runs with them, and the trace keeps the edit', async () => {
    const edited = { to: 'c7@example.com', amount: 90, note: 'capped' };
    const { resumed } = await parkThenResume({ decision: 'approve', by: 'bob', arguments: edited });
    expect(log.executions.filter((e) => e.tool === 'pay').map((e) => e.args)).toEqual([
      { to: 'c7@example.com', amount: 90 },
    ]);
    const step = resumed.traces.find((t) => t.step === 1)!;
    expect(step.actions[1]).toMatchObject({ tool: 'pay', args: edited, ok: true });
    expect(step.events?.[0]).toMatchObject({ type: 'approval', editedArguments: edited });
  });

  it('edited arguments are checked again: ones the schema refuses run nothing and the model is told', async () => {
    const { resumed } = await parkThenResume({ decision: 'approve', by: 'bob', arguments: { to: 7 } });
    expect(log.executions.filter((e) => e.tool === 'pay')).toEqual([]);
    const step = resumed.traces.find((t) => t.step === 1)!;
    expect(step.actions[1]).toMatchObject({ tool: 'pay', ok: false, errorCode: 'invalid_arguments' });
  });

  it('rejected: never runs; the model reads who rejected it and why, and goes on', async () => {
    const { resumed } = await parkThenResume({ decision: 'reject', by: 'carol', reason: 'too much' });
    expect(resumed.result).toMatchObject({ status: 'succeeded', answer: 'done' });
    expect(log.executions.filter((e) => e.tool === 'pay')).toEqual([]);
    const toolMessages = sent()[1]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages[1]!.content).toBe('rejected by carol: too much');
    const step = resumed.traces.find((t) => t.step === 1)!;
    expect(step.actions[1]).toMatchObject({ tool: 'pay', ok: false, errorCode: 'approval_rejected' });
    expect(step.events?.[0]).toMatchObject({ decision: 'reject', by: 'carol', reason: 'too much' });
    expectNativeTranscript(sent());
  });

  it('expired: the same as a rejection, with the reason expired', async () => {
    await parkThenResume({ decision: 'expire' });
    expect(log.executions.filter((e) => e.tool === 'pay')).toEqual([]);
    const toolMessages = sent()[1]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages[1]!.content).toMatch(/^rejected by timeout: expired/);
  });

  it('resumed without a decision: parks again as it was, asking the model nothing', async () => {
    const { parked, resumed } = await parkThenResume(undefined);
    expect(resumed.result.stopReason).toBe('awaiting_approval');
    expect(resumed.result.awaitingApproval).toEqual(parked.result.awaitingApproval);
    expect(sent()).toHaveLength(1);
    expect(log.executions.map((e) => e.tool).sort()).toEqual(['add', 'lookup']);
  });

  it('the wait is not the run time: a decision after ten deadlines still lets the run answer', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    server.reset({ script: [TURN, ANSWER] });
    const tools = toolsWithApproval();
    const parked = await runWith(server, { tools, log, now, budget: { deadlineMs: 5_000 } });
    clock += 50_000;
    const resumed = await runWith(server, {
      tools,
      log,
      now,
      budget: { deadlineMs: 5_000 },
      checkpoint: parked.checkpoints.at(-1)!,
      approvals: { decisions: { 'run-1:1:2': { decision: 'approve', by: 'dan' } } },
    });
    expect(resumed.result).toMatchObject({ status: 'succeeded', stopReason: 'answer' });
  });

  it('tokens and dollars: the resumed run adds only its own later model calls', async () => {
    const { parked, resumed } = await parkThenResume({ decision: 'approve', by: 'alice' });
    const first = sent()[0]!.usage!;
    const second = sent()[1]!.usage!;
    expect(parked.result.usage.promptTokens).toBe(first.promptTokens);
    expect(resumed.result.usage.promptTokens).toBe(first.promptTokens + second.promptTokens);
    expect(resumed.result.usage.completionTokens).toBe(first.completionTokens + second.completionTokens);
  });
});

describe('what needs approval', () => {
  it('a rule of the arguments: under its limit the call runs at once', async () => {
    server.reset({
      script: [{ actions: [{ tool: 'pay', args: { to: 'x@example.com', amount: 5 } }] }, ANSWER],
    });
    const { result } = await runWith(server, { tools: toolsWithApproval(), log });
    expect(result.stopReason).toBe('answer');
    expect(log.executions.map((e) => e.tool)).toEqual(['pay']);
  });

  it('a tool that always asks, even a read-only one; a rule that throws asks too', async () => {
    server.reset({
      script: [
        {
          actions: [
            { tool: 'notify', args: { to: 'x' } },
            { tool: 'shaky', args: {} },
          ],
        },
        ANSWER,
      ],
    });
    const { result } = await runWith(server, { tools: toolsWithApproval(), log });
    expect(result.awaitingApproval?.map((a) => a.tool)).toEqual(['notify', 'shaky']);
    expect(log.executions).toEqual([]);
  });

  it('policy side-effects: every call of a tool not read-only waits; read-only calls run', async () => {
    server.reset({
      script: [
        {
          actions: [
            { tool: 'peek', args: { key: 'k' } },
            { tool: 'add', args: { a: 1, b: 1 } },
            { tool: 'lookup', args: { id: 1 } },
          ],
        },
        ANSWER,
      ],
    });
    const { result } = await runWith(server, {
      tools: toolsWithApproval(),
      log,
      approvals: { policy: 'side-effects' },
    });
    expect(result.awaitingApproval?.map((a) => a.tool)).toEqual(['add', 'lookup']);
    expect(log.executions.map((e) => e.tool)).toEqual(['peek']);
  });

  it('policy none and no tool asking: nothing waits', async () => {
    server.reset({ script: [{ actions: [{ tool: 'add', args: { a: 1, b: 1 } }] }, ANSWER] });
    const { result } = await runWith(server, {
      tools: toolsWithApproval(),
      log,
      approvals: { policy: 'none' },
    });
    expect(result.stopReason).toBe('answer');
  });

  it('calls that cannot run (unknown tool, bad arguments) are refused to the model, never asked about', async () => {
    server.reset({
      script: [
        {
          actions: [
            { tool: 'nope', args: {} },
            { tool: 'pay', args: { to: 'x', amount: -1 } },
          ],
        },
        ANSWER,
      ],
    });
    const { result } = await runWith(server, {
      tools: toolsWithApproval(),
      log,
      approvals: { policy: 'side-effects' },
    });
    expect(result.stopReason).toBe('answer');
  });
});

describe('which call a decision decides', () => {
  it('only a call of the turn the run was parked on: decisions for other keys or calls change nothing', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const tools = toolsWithApproval();
    const parked = await runWith(server, { tools, log });
    const resumed = await runWith(server, {
      tools,
      log,
      checkpoint: parked.checkpoints.at(-1)!,
      approvals: {
        decisions: {
          'run-1:1:1': { decision: 'reject', by: 'x', reason: 'a call that needs none' },
          'run-1:2:2': { decision: 'approve', by: 'x' },
          'run-1:1:9': { decision: 'approve', by: 'x' },
        },
      },
    });
    expect(resumed.result.stopReason).toBe('awaiting_approval');
    expect(log.executions.map((e) => e.tool).sort()).toEqual(['add', 'lookup']);
  });

  it('never a call of a turn planned in this run, even one whose key a decision names', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const run = await runWith(server, {
      tools: toolsWithApproval(),
      log,
      // e.g. decisions carried over from an earlier run of the same id
      approvals: { decisions: { 'run-1:1:2': { decision: 'approve', by: 'someone' } } },
    });
    expect(run.result.stopReason).toBe('awaiting_approval');
    expect(log.executions.map((e) => e.tool)).not.toContain('pay');
  });
});

describe('what the approver sees and edits', () => {
  it('the arguments as the model gave them: a transform of the schema is applied once, to what was approved', async () => {
    const paid: unknown[] = [];
    const tools = new ToolRegistry([
      defineTool({
        name: 'pay_usd',
        description: 'Pay an amount in dollars.',
        // The model speaks dollars; the tool works in cents.
        parameters: z.object({
          to: z.string(),
          amount: z.number().transform((usd) => Math.round(usd * 100)),
          memo: z.string().default(''),
        }),
        needsApproval: true,
        async execute(args) {
          paid.push(args);
          return `paid ${args.amount} cents to ${args.to}`;
        },
      }),
    ]);
    server.reset({ script: [{ actions: [{ tool: 'pay_usd', args: { to: 'acme', amount: 250 } }] }, ANSWER] });
    const parked = await runWith(server, { tools, log });
    const [asked] = parked.result.awaitingApproval!;
    expect(asked!.arguments).toEqual({ to: 'acme', amount: 250 });
    // The approver adds a memo and leaves the rest as shown.
    const edited = { ...(asked!.arguments as Record<string, unknown>), memo: 'invoice 7' };
    await runWith(server, {
      tools,
      log,
      checkpoint: parked.checkpoints.at(-1)!,
      approvals: { decisions: { [asked!.callKey]: { decision: 'approve', by: 'ops', arguments: edited } } },
    });
    expect(paid).toEqual([{ to: 'acme', amount: 25_000, memo: 'invoice 7' }]);
  });
});
