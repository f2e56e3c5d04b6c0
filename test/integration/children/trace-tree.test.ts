// `npm run trace -- --job ID` on a tree of agents, through a real worker (Redis, MariaDB, the scripted model): a
// chain agent calls a child that calls a grandchild (depth 2). The root's timeline has the child's run nested
// under the call that started it, and the grandchild's nested a level deeper under the child's call; a tree past
// the bound on runs is cut, and what was cut is named.
import { afterAll, expect, it } from 'vitest';
import { runTraceCommand } from '../../../src/console/trace-command.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { renderTraceTree } from '../../../src/console/render-trace-tree.js';
import { loadTraceTree } from '../../../src/console/trace-tree.js';
import { createStorePool } from '../../../src/store/pool.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** A chain agent calls the next one deeper; refused past the depth limit, it answers with what it got. */
function chainModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = String(request.messages[1]?.content ?? '');
  if (!task.startsWith('chain')) return undefined;
  if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: `${task}+` } }] };
  return { answer: `${task} got (${toolResults(request).join(' | ')})` };
}

setupOrFail(async () => {
  ns = createNamespace('tracetree');
  model = await startScriptedModel({ rules: [chainModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    AGENT_MAX_DEPTH: '2',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

async function trace(jobId: string): Promise<string> {
  let out = '';
  const code = await runTraceCommand(['--job', jobId], () => ns.mysqlUrl, {
    stdout: (text) => (out += text),
    stderr: (text) => (out += text),
  });
  expect(code).toBe(0);
  return out;
}

it('prints a depth-2 tree: each child run nested under the call that started it', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'chain', task: 'chain' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result.status).toBe('succeeded');
  const child = result.children![0]!.jobId;
  const grandchild = (await ns.client.getResult(child))!.children![0]!.jobId;

  const lines = (await trace(jobId)).split('\n');
  const at = (pattern: RegExp) => {
    const i = lines.findIndex((line) => pattern.test(line));
    expect(i, String(pattern)).toBeGreaterThanOrEqual(0);
    return i;
  };
  const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const root = at(new RegExp(`^run ${esc(jobId)} · agent chain`));
  const rootCall = at(/^ {4}1 tool chain #1 · ok/);
  const childRun = at(new RegExp(`^ {6}│ run ${esc(child)} · agent chain · succeeded`));
  const childCall = at(/^ {6}│ {5}1 tool chain #1 · ok/);
  const grandchildRun = at(new RegExp(`^ {6}│ {7}│ run ${esc(grandchild)} · agent chain · succeeded`));
  const refused = at(/^ {6}│ {7}│ {5}1 tool chain #1 · failed: child_depth/);
  const rootAnswer = at(/^ {4}2 final answer|^ {4}2 answer/);
  expect(root).toBeLessThan(rootCall);
  expect(rootCall).toBeLessThan(childRun);
  expect(childRun).toBeLessThan(childCall);
  expect(childCall).toBeLessThan(grandchildRun);
  expect(grandchildRun).toBeLessThan(refused);
  // The child's steps end before the root's next step.
  expect(refused).toBeLessThan(rootAnswer);
  expect(lines.filter((line) => /run child-/.test(line))).toHaveLength(2);

  // Bounded: two runs at most, the grandchild is named, not printed.
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  try {
    const store = new ConsoleStore(pool);
    const cut = await loadTraceTree((id) => store.loadRun(id), jobId, { maxDepth: 10, maxRuns: 2 });
    const text = renderTraceTree(cut!);
    expect(text).toContain(`run ${child}`);
    expect(text).not.toContain(`run ${grandchild}`);
    expect(text).toContain(
      `not printed (past the tree's bounds: 1; each is a run: npm run trace -- --job ID):`,
    );
    expect(text).toContain(`  ${grandchild}`);
  } finally {
    await pool.end();
  }
});
