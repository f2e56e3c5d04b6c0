// Agents that call agents, through a real worker (Redis, MariaDB, the scripted model over HTTP): a parent's call
// of a child agent runs as a job of its own; the parent holds no worker slot while it waits (one worker of
// concurrency 1 runs the parent and its three children), resumes with each child's answer as that call's result,
// and its usage covers the tree, equal to the model server's own count. Depth is bounded.
import { afterAll, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
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
  queryStore,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { expectNativeTranscript } from '../../support/native-transcript.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');
const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** The report writer asks three analysts at once, then answers with what they said. */
function reportModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const analyst = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (analyst) return { answer: `${analyst[1]} sales grew` };
  if (!task.startsWith('report on regions')) return undefined;
  if (turnsIn(request.messages) === 0) {
    return {
      actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'region_analyst', args: { region } })),
    };
  }
  return { answer: `report: ${toolResults(request).join(' | ')}` };
}

/** A chain agent calls the next one deeper; refused past the depth limit, it answers with what it got. */
function chainModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (!task.startsWith('chain')) return undefined;
  if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: `${task}+` } }] };
  return { answer: `${task} got (${toolResults(request).join(' | ')})` };
}

setupOrFail(async () => {
  ns = createNamespace('children');
  model = await startScriptedModel({ rules: [reportModel, chainModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    // One slot: a parent that held it while its children wait would never finish.
    WORKER_CONCURRENCY: '1',
    AGENT_MAX_DEPTH: '2',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

it('a parent calling three children in one turn, on one worker of concurrency 1: each child a job of its own', async () => {
  const first = model.requests.length;
  const { jobId } = await ns.client.enqueue({ agent: 'report-writer', task: 'report on regions' });
  const result: AgentResult = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', steps: 2, toolCalls: 3 });
  expect(result.answer).toBe('report: EU sales grew | US sales grew | APAC sales grew');
  expect(result.children?.map((c) => [c.agent, c.status, c.stopReason])).toEqual([
    ['region-analyst', 'succeeded', 'answer'],
    ['region-analyst', 'succeeded', 'answer'],
    ['region-analyst', 'succeeded', 'answer'],
  ]);
  // Each child is an ordinary job with its own result, and a run of the store that names its parent.
  for (const child of result.children ?? []) {
    expect((await ns.client.getResult(child.jobId))?.answer).toMatch(/sales grew$/);
  }
  const rows = await queryStore<{ job_id: string; parent_job_id: string | null }>(
    ns,
    'SELECT job_id, parent_job_id FROM agent_runs WHERE parent_job_id = ? ORDER BY job_id',
    [jobId],
  );
  expect(rows.map((r) => r.job_id).sort()).toEqual((result.children ?? []).map((c) => c.jobId).sort());
  // The tree's usage is the model server's own count of every call of it: the parent's two, each child's one.
  const tree = model.requests.slice(first);
  expect(tree).toHaveLength(5);
  // The parent's own requests, across its park on another job's time: its turn back as it wrote it, each child's
  // answer a tool message answering its call.
  expectNativeTranscript(
    tree.filter((r) => taskOf(r).startsWith('report on regions')),
    { toolOutputs: ['EU sales grew', 'US sales grew', 'APAC sales grew'] },
  );
  const served = tree.reduce(
    (sum, r) => ({
      promptTokens: sum.promptTokens + (r.usage?.promptTokens ?? 0),
      completionTokens: sum.completionTokens + (r.usage?.completionTokens ?? 0),
    }),
    { promptTokens: 0, completionTokens: 0 },
  );
  expect(result.usage).toMatchObject({
    ...served,
    totalTokens: served.promptTokens + served.completionTokens,
  });
  const childCost = (result.children ?? []).reduce((sum, c) => sum + c.usage.costUsd, 0);
  expect(result.usage.costUsd).toBeGreaterThan(childCost);
});

it('a child calling its own child (depth 2), and a call past the depth limit refused to the model', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'chain', task: 'chain' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result.status).toBe('succeeded');
  // depth 0 → 1 → 2; the agent at depth 2 is refused a third level and says so.
  expect(result.answer).toBe(
    'chain got (chain+ got (chain++ got (chain was not started: agents may call agents at most 2 deep.)))',
  );
  expect(result.children).toHaveLength(1);
  const child = await ns.client.getResult(result.children![0]!.jobId);
  expect(child?.children).toHaveLength(1);
});

it('a producer cannot enqueue a task that claims a parent', async () => {
  await expect(
    ns.client.enqueue({ agent: 'chain', task: 'x', parent: { jobId: '1', callKey: 'k', depth: 1 } }),
  ).rejects.toThrow(/parent/);
});

it('a batch of 10 parents with children against a batch cap: no call of any tree above it', async () => {
  const first = model.requests.length;
  const cap = 0.1;
  const { batchId } = await ns.client.enqueueBatch({
    tasks: Array.from({ length: 10 }, () => ({ agent: 'report-writer', task: 'report on regions' })),
    budget: { maxCostUsd: cap },
  });
  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 120_000 });
  expect(batch.summary.tasks).toBe(10);
  // The gpt-4-turbo-preview prices the fleet tests run at: $10 and $30 per million tokens.
  const servedUsd = model.requests
    .slice(first)
    .reduce((sum, r) => sum + (r.usage!.promptTokens * 10 + r.usage!.completionTokens * 30) / 1e6, 0);
  expect(servedUsd).toBeLessThanOrEqual(cap + 1e-9);
  // Each parent's usage covers its tree: the batch's sum is every call of every tree, counted once.
  expect(batch.summary.usage.costUsd).toBeCloseTo(servedUsd, 6);
  expect(batch.summary.stopped + batch.summary.failed).toBeGreaterThan(0);
}, 150_000);
