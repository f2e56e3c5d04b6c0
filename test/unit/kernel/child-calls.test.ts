// Child agents in the kernel: a turn that calls child agents runs its other calls, then parks with a budget for
// each child carved from what the run has left; resumed with their outcomes, each is its call's result, what they
// spent counts against the run, and the result's usage covers the tree. Refusals (depth, per-turn cap, no budget
// left) are observations the model reads.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { childAgentTool, type ChildOutcome } from '../../../src/kernel/child-calls.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
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
let sent: () => ScriptedModelServer['requests'];
beforeEach(() => {
  log = { executions: [], flaky: { failuresLeft: 0 } };
  const first = server.requests.length;
  sent = () => server.requests.slice(first);
});

const analyst = defineAgent({
  name: 'region-analyst',
  description: 'Analyses one region.',
  input: z.object({ region: z.string() }),
  tools: [],
});
const helper = defineAgent({ name: 'helper', description: 'Does a task.', tools: [] });

function tools(): ToolRegistry {
  const base = testTools(log).registry;
  return new ToolRegistry([
    ...base.names.map((n) => base.get(n)!),
    childAgentTool(analyst),
    childAgentTool(helper),
  ]);
}

const TURN: ScriptedReply = {
  actions: [
    { tool: 'region_analyst', args: { region: 'EU' } },
    { tool: 'add', args: { a: 1, b: 2 } },
    { tool: 'helper', args: { task: 'summarise' } },
  ],
};
const ANSWER: ScriptedReply = { answer: 'done' };

const usage = (promptTokens: number, completionTokens: number, costUsd: number) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
  costUsd,
});

function outcome(
  jobId: string,
  agent: string,
  answer: string,
  over: Partial<ChildOutcome> = {},
): ChildOutcome {
  return {
    jobId,
    agent,
    status: 'succeeded',
    stopReason: 'answer',
    answer,
    usage: usage(800, 200, 0.014),
    ...over,
  };
}

describe('a turn that calls child agents', () => {
  it('runs its other calls, then parks with a budget for each child carved from what is left', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const run = await runWith(server, {
      tools: tools(),
      log,
      budget: { maxTokens: 20_000, maxCostUsd: 0.5 },
    });
    expect(run.result).toMatchObject({ status: 'stopped', stopReason: 'awaiting_children', steps: 1 });
    expect(log.executions.map((e) => e.tool)).toEqual(['add']);
    const children = run.result.awaitingChildren!;
    expect(children.map((c) => [c.agent, c.input, c.callKey])).toEqual([
      ['region-analyst', { region: 'EU' }, 'run-1:1:1'],
      ['helper', { task: 'summarise' }, 'run-1:1:3'],
    ]);
    const spent = run.result.usage;
    for (const child of children) {
      // Shared equally, after what the run spent and a reserve for its own final turn.
      expect(child.budget.maxTokens).toBeLessThan((20_000 - spent.totalTokens) / 2);
      expect(child.budget.maxTokens).toBeGreaterThan((20_000 - spent.totalTokens) / 2 - 2_000);
      expect(child.budget.maxCostUsd).toBeLessThan((0.5 - spent.costUsd) / 2);
      expect(child.budget.deadlineMs).toBeGreaterThan(1_000);
    }
    expect(run.checkpoints.at(-1)?.result).toBeNull();
  });

  it('resumed with their outcomes: each is its call result, and the usage covers the tree', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const t = tools();
    const parked = await runWith(server, { tools: t, log, budget: { maxTokens: 20_000, maxCostUsd: 0.5 } });
    const resumed = await runWith(server, {
      tools: t,
      log,
      budget: { maxTokens: 20_000, maxCostUsd: 0.5 },
      checkpoint: parked.checkpoints.at(-1) as RunState,
      children: {
        results: {
          'run-1:1:1': outcome('child-a', 'region-analyst', 'EU grew 4%'),
          'run-1:1:3': outcome('child-b', 'helper', '', {
            status: 'stopped',
            stopReason: 'cost_budget',
            answer: 'half a summary',
            stopDetail: '$0.01 left',
          }),
        },
      },
    });
    expect(resumed.result).toMatchObject({ status: 'succeeded', answer: 'done', steps: 2, toolCalls: 3 });
    const results = sent()[1]!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => m.content);
    expect(results).toEqual([
      'EU grew 4%',
      '3',
      'helper stopped: cost_budget ($0.01 left); what it had: half a summary',
    ]);
    expectNativeTranscript(sent());
    const own = sent().reduce((sum, r) => sum + r.usage!.promptTokens + r.usage!.completionTokens, 0);
    expect(resumed.result.usage.totalTokens).toBe(own + 2_000);
    expect(resumed.result.children).toEqual([
      {
        jobId: 'child-a',
        agent: 'region-analyst',
        status: 'succeeded',
        stopReason: 'answer',
        usage: usage(800, 200, 0.014),
      },
      {
        jobId: 'child-b',
        agent: 'helper',
        status: 'stopped',
        stopReason: 'cost_budget',
        usage: usage(800, 200, 0.014),
      },
    ]);
    expect(log.executions.map((e) => e.tool)).toEqual(['add']);
  });

  it('what children spent counts against the run: the tree ends within its limits', async () => {
    server.reset({ script: [TURN, { actions: [{ tool: 'add', args: { a: 2, b: 2 } }] }, ANSWER, ANSWER] });
    const t = tools();
    const budget = { maxTokens: 9_000, maxCostUsd: 0.5 };
    const parked = await runWith(server, { tools: t, log, budget });
    const [a, b] = parked.result.awaitingChildren!;
    // Each child spent its whole share.
    const spentAll = (c: typeof a) =>
      outcome('c', c!.agent, 'ok', { usage: usage(c!.budget.maxTokens - 100, 100, c!.budget.maxCostUsd) });
    const resumed = await runWith(server, {
      tools: t,
      log,
      budget,
      checkpoint: parked.checkpoints.at(-1) as RunState,
      children: { results: { [a!.callKey]: spentAll(a), [b!.callKey]: spentAll(b) } },
    });
    expect(resumed.result.usage.totalTokens).toBeLessThanOrEqual(9_000);
    expect(resumed.result.usage.costUsd).toBeLessThanOrEqual(0.5);
  });
});

describe('child calls refused to the model', () => {
  it('past the depth limit: no child starts and the run goes on', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const run = await runWith(server, { tools: tools(), log, children: { allowed: false, maxDepth: 3 } });
    expect(run.result.stopReason).toBe('answer');
    const results = sent()[1]!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => m.content);
    expect(results[0]).toBe('region_analyst was not started: agents may call agents at most 3 deep.');
  });

  it('past the per-turn cap, and when the budget left cannot pay for another agent', async () => {
    server.reset({ script: [TURN, ANSWER] });
    const capped = await runWith(server, { tools: tools(), log, children: { maxPerTurn: 1 } });
    expect(capped.result.awaitingChildren?.map((c) => c.agent)).toEqual(['region-analyst']);
    expect(capped.checkpoints.at(-1)?.pending?.results[2]?.output).toBe(
      'helper was not started: at most 1 agents per turn.',
    );
    server.reset({ script: [TURN, ANSWER] });
    // About 500 tokens spent and 170 kept for the final turn: less than 1,000 each is left for two children.
    const poor = await runWith(server, { tools: tools(), log, budget: { maxTokens: 2_500 } });
    expect(poor.result.stopReason).not.toBe('awaiting_children');
    expect(poor.traces[0]?.observations[0]).toBe(
      'region_analyst was not started: the budget left cannot pay for another agent.',
    );
  });
});
