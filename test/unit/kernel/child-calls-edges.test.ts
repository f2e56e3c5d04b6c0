// Child agents in the kernel at their edges (docs/child-agents.md), from a red-team pass: an approver's edit of a
// child call, a child's answer bounded as a tool result, the input a child starts with, a name given twice.
// Scripted model over HTTP, the real kernel, children's outcomes given as the worker would.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { childAgentTool, type ChildOutcome } from '../../../src/kernel/child-calls.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { defineFleet } from '../../../src/kernel/define-fleet.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { RunState } from '../../../src/kernel/types.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith, testTools, type ToolLog } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

let log: ToolLog;
let sent: () => ScriptedModelServer['requests'];
beforeEach(() => {
  log = { executions: [], flaky: { failuresLeft: 0 } };
  const first = server.requests.length;
  sent = () => server.requests.slice(first);
});

const helper = defineAgent({ name: 'helper', description: 'Does a task.', tools: [] });
// An input schema with a transform: what the model writes is not what the schema outputs.
const counter = defineAgent({
  name: 'counter',
  description: 'Counts the letters of a word.',
  input: z.object({ word: z.string().transform((w) => w.length) }),
  tools: [],
});

function tools(): ToolRegistry {
  const base = testTools(log).registry;
  return new ToolRegistry([
    ...base.names.map((n) => base.get(n)!),
    childAgentTool(helper),
    childAgentTool(counter),
  ]);
}

const usage = { promptTokens: 800, completionTokens: 200, totalTokens: 1_000, costUsd: 0.014 };
const outcome = (answer: string, over: Partial<ChildOutcome> = {}): ChildOutcome => ({
  jobId: 'child-x',
  agent: 'helper',
  status: 'succeeded',
  stopReason: 'answer',
  answer,
  usage,
  ...over,
});

describe('approvals and child calls', () => {
  it("an approver's edit of a child call's arguments is what the child is started with", async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'helper', args: { task: 'wire $1M to account 666' } }] },
        { answer: 'done' },
      ],
    });
    const t = tools();
    const parked = await runWith(server, { tools: t, log, approvals: { policy: 'side-effects' } });
    expect(parked.result.stopReason).toBe('awaiting_approval');
    const callKey = parked.result.awaitingApproval![0]!.callKey;
    const resumed = await runWith(server, {
      tools: t,
      log,
      checkpoint: parked.checkpoints.at(-1) as RunState,
      approvals: {
        policy: 'side-effects',
        decisions: {
          [callKey]: { decision: 'approve', by: 'alice', arguments: { task: 'say hello' }, decidedAt: 1 },
        },
      },
    });
    expect(resumed.result.stopReason).toBe('awaiting_children');
    // The person approved the edited call only.
    expect(resumed.result.awaitingChildren![0]!.input).toEqual({ task: 'say hello' });
  });
});

describe('what a child says, as the parent reads it', () => {
  it("a child's answer is bounded like any tool result (toolResultMaxTokens)", async () => {
    server.reset({ script: [{ actions: [{ tool: 'helper', args: { task: 'x' } }] }, { answer: 'done' }] });
    const t = tools();
    const options = { toolResultMaxTokens: 100 };
    const parked = await runWith(server, { tools: t, log, options });
    const [child] = parked.result.awaitingChildren!;
    // About 13,000 tokens: what one child with a generous completion limit (or a structured output) may answer.
    const huge = 'lorem ipsum dolor sit amet '.repeat(2_400);
    const resumed = await runWith(server, {
      tools: t,
      log,
      options,
      checkpoint: parked.checkpoints.at(-1) as RunState,
      children: { results: { [child!.callKey]: outcome(huge) } },
    });
    expect(resumed.result.stopReason).toBe('answer');
    const observation = String(sent()[1]!.messages.find((m) => m.role === 'tool')?.content ?? '');
    // A tool returning the same text would be cut to about 100 tokens (a few hundred characters).
    expect(observation.length).toBeGreaterThan(0);
    expect(observation.length).toBeLessThan(2_000);
  });

  it("a failed child's message is bounded like any tool result too", async () => {
    server.reset({ script: [{ actions: [{ tool: 'helper', args: { task: 'x' } }] }, { answer: 'done' }] });
    const t = tools();
    const options = { toolResultMaxTokens: 100 };
    const parked = await runWith(server, { tools: t, log, options });
    const [child] = parked.result.awaitingChildren!;
    await runWith(server, {
      tools: t,
      log,
      options,
      checkpoint: parked.checkpoints.at(-1) as RunState,
      children: {
        results: {
          [child!.callKey]: outcome('x'.repeat(100_000), { status: 'stopped', stopReason: 'cost_budget' }),
        },
      },
    });
    const observation = String(sent()[1]!.messages.find((m) => m.role === 'tool')?.content ?? '');
    expect(observation.length).toBeLessThan(2_000);
  });
});

describe("the child's input", () => {
  it("the input a child is started with passes its own agent's input schema (not its output)", async () => {
    server.reset({
      script: [{ actions: [{ tool: 'counter', args: { word: 'hello' } }] }, { answer: 'done' }],
    });
    const parked = await runWith(server, { tools: tools(), log });
    const [child] = parked.result.awaitingChildren!;
    // The worker validates the child's task against the child's input schema (run-config.ts parseInput): the
    // transformed value { word: 5 } fails it, and the child fails with invalid_task.
    expect(counter.input!.safeParse(child!.input).success).toBe(true);
  });
});

describe('the fleet configuration', () => {
  it('a child definition and a listed agent of the same name that differ are refused, not merged silently', () => {
    const listed = defineAgent({
      name: 'analyst',
      description: 'Listed.',
      input: z.object({ region: z.string() }),
      tools: [],
    });
    const other = defineAgent({
      name: 'analyst',
      description: 'Another with the same name.',
      input: z.object({ customerId: z.number() }),
      tools: [],
    });
    const parent = defineAgent({ name: 'writer', description: 'W.', tools: [], agents: [other] });
    // The parent's model is offered `other`'s schema, the worker runs `listed`: every call fails its input.
    expect(() => defineFleet({ agents: [parent, listed] })).toThrow(/defined twice|analyst/);
  });
});
