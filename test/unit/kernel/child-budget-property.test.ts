// The tree's budget, checked over random trees against the scripted model over HTTP: a parent's kernel carves
// each child's budget from what it has left, each child's kernel holds to it, and the parent counts what they
// spent. Whatever the tree's shape, no run ends above its own limits, and the root's usage (the whole tree) stays
// within the root's budget and equals the model server's own count of every call of the tree.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { childAgentTool, type ChildOutcome } from '../../../src/kernel/child-calls.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { AgentResult, RunState } from '../../../src/kernel/types.js';
import type { Budget } from '../../../src/kernel/budget.js';
import {
  startScriptedModel,
  type ReplyRule,
  type ScriptedModelServer,
} from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import { runWith, testTools } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

/** A node of a tree: filler steps of its own, then its children in one turn, then its answer. */
interface Shape {
  steps: number;
  children: Shape[];
}

const shape: fc.Arbitrary<Shape> = fc.letrec<{ node: Shape }>((tie) => ({
  node: fc.record({
    steps: fc.integer({ min: 0, max: 3 }),
    children: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant<Shape[]>([]),
      fc.array(tie('node'), { minLength: 1, maxLength: 3 }),
    ),
  }),
})).node;

const node = defineAgent({ name: 'node', description: 'A node of the tree.', tools: [] });

function tools(): ToolRegistry {
  const base = testTools().registry;
  return new ToolRegistry([base.get('add')!, childAgentTool(node)]);
}

/** Each node's task names its path; its shape is looked up by it, so any run of it replies the same. */
function modelFor(shapes: Map<string, Shape>): ReplyRule {
  return (request) => {
    const task = String(request.messages[1]?.content ?? '');
    const s = shapes.get(task);
    if (!s) return undefined;
    const turn = turnsIn(request.messages);
    if (turn < s.steps) return { actions: [{ tool: 'add', args: { a: turn, b: 1 } }] };
    if (turn === s.steps && s.children.length > 0)
      return { actions: s.children.map((_, i) => ({ tool: 'node', args: { task: `${task}.${i}` } })) };
    return { answer: `${task} done` };
  };
}

function index(s: Shape, path: string, into: Map<string, Shape>): void {
  into.set(path, s);
  s.children.forEach((child, i) => index(child, `${path}.${i}`, into));
}

/** The worker's cycle for one run, children run in process, recursively; every run's result is kept. */
async function runTree(task: string, budget: Partial<Budget>, depth: number, results: AgentResult[]) {
  const t = tools();
  let run = await runWith(server, { runId: task, task, tools: t, budget, children: { allowed: depth < 3 } });
  while (run.result.stopReason === 'awaiting_children') {
    const outcomes: Record<string, ChildOutcome> = {};
    for (const child of run.result.awaitingChildren!) {
      const input = child.input as { task: string };
      const done = await runTree(input.task, { ...child.budget, maxSteps: 8 }, depth + 1, results);
      outcomes[child.callKey] = { ...done, agent: 'node', error: done.error?.message ?? null };
    }
    run = await runWith(server, {
      runId: task,
      task,
      tools: t,
      budget,
      checkpoint: run.checkpoints.at(-1) as RunState,
      children: { allowed: depth < 3, results: outcomes },
    });
  }
  results.push(run.result);
  return run.result;
}

it('no run of a random tree ends above its limits, and the root covers the tree', async () => {
  let trees = 0;
  await fc.assert(
    fc.asyncProperty(
      shape,
      fc.integer({ min: 3_000, max: 40_000 }),
      fc.double({ min: 0.02, max: 0.3, noNaN: true }),
      async (tree, maxTokens, maxCostUsd) => {
        trees++;
        const root = `tree${trees}`;
        const shapes = new Map<string, Shape>();
        index(tree, root, shapes);
        server.reset({ rules: [modelFor(shapes)] });
        const first = server.requests.length;
        const budget = { maxSteps: 8, maxTokens, maxCostUsd, deadlineMs: 60_000 };
        const results: AgentResult[] = [];
        const top = await runTree(root, budget, 0, results);
        expect(top.usage.totalTokens).toBeLessThanOrEqual(maxTokens);
        expect(top.usage.costUsd).toBeLessThanOrEqual(maxCostUsd + 1e-9);
        const served = server.requests.slice(first);
        const tokens = served.reduce((sum, r) => sum + r.usage!.promptTokens + r.usage!.completionTokens, 0);
        expect(top.usage.totalTokens).toBe(tokens);
        for (const result of results) expect(['succeeded', 'stopped']).toContain(result.status);
      },
    ),
    { numRuns: 60, seed: 20_261_206 },
  );
}, 120_000);
