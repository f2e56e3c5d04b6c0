// One budget for the tree, in the fleet's spend ledger (real worker, Redis, MariaDB, the scripted model over
// HTTP): before a child starts, its whole budget is set aside in its parent's batch (a hold); the child's calls
// book in the hold alone, and the hold is settled with what the child spent, so the batch counts every call of the
// tree once. A child the batch cannot cover in full runs call by call against it, as any task. The parent's usage
// covers the tree, its own part in `usage.self`; a child its share stops says whose budget it was.
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
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
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let redis: Redis;
let ledger: SpendLedger;

const CHILD_LATENCY_MS = 1_500;
const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');
const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
// The gpt-4-turbo-preview prices the fleet tests run at: $10 and $30 per million tokens.
const usdOf = (requests: RecordedRequest[]) =>
  requests.reduce((sum, r) => sum + (r.usage!.promptTokens * 10 + r.usage!.completionTokens * 30) / 1e6, 0);

/** The report writer asks three analysts at once (each slow to answer), then answers with what they said. */
function reportModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const analyst = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (analyst) return { answer: `${analyst[1]} sales grew`, latencyMs: CHILD_LATENCY_MS };
  if (!task.startsWith('report on regions')) return undefined;
  if (turnsIn(request.messages) === 0) {
    return { actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'region_analyst', args: { region } })) };
  }
  return { answer: `report: ${toolResults(request).join(' | ')}` };
}

/** A chain agent whose child keeps asking for a grandchild it may not have, until its share runs out. */
function spinModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (task === 'spin') {
    if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: 'spinner' } }] };
    return { answer: `spin: ${toolResults(request).join(' | ')}` };
  }
  if (task === 'spinner') {
    return { actions: [{ tool: 'chain', args: { task: `deeper ${turnsIn(request.messages)}` } }] };
  }
  return undefined;
}

setupOrFail(async () => {
  ns = createNamespace('childholds');
  model = await startScriptedModel({ rules: [reportModel, spinModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    WORKER_CONCURRENCY: '2',
    AGENT_MAX_DEPTH: '1',
  });
  redis = new Redis(REDIS_URL);
  ledger = new SpendLedger({ redis, prefix: ns.prefix });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  redis?.disconnect();
  await ns?.cleanup();
  await model?.close();
});

it("each child's budget is set aside in the parent's batch before it starts, and the batch counts the tree once", async () => {
  const first = model.requests.length;
  const { batchId } = await ns.client.enqueueBatch({
    tasks: [{ agent: 'report-writer', task: 'report on regions', budget: { maxCostUsd: 0.3 } }],
    budget: { maxCostUsd: 5 },
  });
  const scope = `batch:${batchId}`;
  // While the first children's replies are on their way (two workers' slots: the third waits its turn), the
  // batch holds the three children's shares, not their calls.
  await expect
    .poll(() => model.requests.slice(first).filter((r) => taskOf(r).startsWith('Input:')).length, {
      timeout: 30_000,
    })
    .toBeGreaterThan(0);
  const during = await ledger.getSpend(scope);
  expect(during.liveReservations).toBe(3);
  // Three equal shares of what the parent had left after its first call, less the reserve for its last turn.
  const parentFirstCall = usdOf(model.requests.slice(first, first + 1));
  expect(during.reservedUsd).toBeGreaterThan(0.2);
  expect(during.reservedUsd).toBeLessThanOrEqual(0.3 - parentFirstCall + 1e-6);

  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  expect(batch.summary.succeeded).toBe(1);
  const tree = model.requests.slice(first);
  expect(tree).toHaveLength(5);
  const after = await ledger.getSpend(scope);
  expect(after.reservedMicroUsd).toBe(0);
  expect(after.liveReservations).toBe(0);
  // Every call once: the parent's two in the batch directly, each child's one through its settled hold (each
  // settle rounds up to the micro-dollar).
  expect(Math.abs(after.usedUsd - usdOf(tree))).toBeLessThanOrEqual(5e-6);

  // The parent's usage covers the tree; its own calls alone are `usage.self`.
  const result = (await ns.client.getResult(batch.jobIds?.[0] ?? ''))!;
  const own = tree.filter((r) => taskOf(r).startsWith('report on regions'));
  expect(result.usage.self).toMatchObject({
    promptTokens: own.reduce((s, r) => s + r.usage!.promptTokens, 0),
    completionTokens: own.reduce((s, r) => s + r.usage!.completionTokens, 0),
  });
  expect(result.usage.self!.costUsd).toBeCloseTo(usdOf(own), 9);
  const children = (result.children ?? []).reduce((s, c) => s + c.usage.costUsd, 0);
  expect(result.usage.costUsd).toBeCloseTo(result.usage.self!.costUsd + children, 9);
  // A child's hold is gone with its calls settled in it: nothing of the tree is left reserved anywhere.
  const day = await ledger.getSpend(`day:${new Date().toISOString().slice(0, 10)}`);
  expect(day.liveReservations).toBe(0);
}, 90_000);

it('a child the batch cannot cover in full is not refused: it runs call by call against the batch cap', async () => {
  const first = model.requests.length;
  // The parent may spend $1, so each child's share is far above what the batch has: no hold fits.
  const { batchId } = await ns.client.enqueueBatch({
    tasks: [{ agent: 'report-writer', task: 'report on regions', budget: { maxCostUsd: 1 } }],
    budget: { maxCostUsd: 0.15 },
  });
  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  const tree = model.requests.slice(first);
  expect(usdOf(tree)).toBeLessThanOrEqual(0.15);
  const after = await ledger.getSpend(`batch:${batchId}`);
  expect(after.reservedMicroUsd).toBe(0);
  expect(Math.abs(after.usedUsd - usdOf(tree))).toBeLessThanOrEqual(5e-6);
  const result = (await ns.client.getResult(batch.jobIds?.[0] ?? ''))!;
  expect(result.children?.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
}, 90_000);

it('a child stopped by the share its parent gave it says so', async () => {
  const { jobId } = await ns.client.enqueue({
    agent: 'chain',
    task: 'spin',
    budget: { maxCostUsd: 0.02 },
  });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  const child = await ns.client.getResult(result.children![0]!.jobId);
  expect(child).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
  expect(child!.stopDetail).toMatch(/^the cost budget its parent agent gave it: \$[\d.]+ of \$[\d.]+ left/);
  // The parent's model is told the same, as the call's result.
  expect(result.answer).toMatch(/chain stopped: cost_budget \(the cost budget its parent agent gave it/);
}, 90_000);
