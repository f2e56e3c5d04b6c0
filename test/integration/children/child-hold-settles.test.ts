// Every way a child agent's job can end settles its hold (real worker, Redis, MariaDB, the scripted model over
// HTTP): a child whose task the worker refuses before any run (a model's blank task), and a child delivered again
// after its result went out (its worker died before it settled). An unsettled hold would stay in its parent's
// batch as a live reservation until the child's deadline, then count as spent at its worst case.
import { FlowProducer, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { ChildHolds } from '../../../src/fleet/child-holds.js';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
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

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

/** `blank`: the model asks a chain agent with a task of spaces (valid for the tool, not as a task), then answers. */
function blankModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (task === 'blank') {
    if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: '   ' } }] };
    return { answer: 'done' };
  }
  if (task === 'idle parent') return { answer: 'idle' };
  return undefined;
}

setupOrFail(async () => {
  ns = createNamespace('holdsettle');
  model = await startScriptedModel({ rules: [blankModel] });
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

it('a child whose task the worker refuses before any run settles its hold at nothing', async () => {
  const { batchId } = await ns.client.enqueueBatch({
    tasks: [{ agent: 'chain', task: 'blank', budget: { maxCostUsd: 0.2 } }],
    budget: { maxCostUsd: 5 },
  });
  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  const result = (await ns.client.getResult(batch.jobIds?.[0] ?? ''))!;
  expect(result.children?.map((c) => c.status)).toEqual(['failed']);
  const child = await ns.client.getResult(result.children![0]!.jobId);
  expect(child?.error?.code).toBe('invalid_task');
  const spend = await ledger.getSpend(batchScope(batchId));
  expect(spend.liveReservations).toBe(0);
  expect(spend.reservedMicroUsd).toBe(0);
}, 90_000);

it('a child delivered again after its result went out settles its hold with what the result says', async () => {
  const batchId = `settle-again-${Date.now()}`;
  await ledger.setCaps(batchScope(batchId), { maxCostUsd: 5 });
  const parentId = `parent-${Date.now()}`;
  const childId = `child-${Date.now()}`;
  const held = await new ChildHolds(ledger).take(
    { batchId },
    childId,
    { maxTokens: 10_000, maxCostUsd: 0.1 },
    Date.now() + 60_000,
  );
  if (!held.ok) throw new Error(held.message);
  // The child's run ended, and its result went out, before its worker died: it is delivered again.
  const results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: ns.prefix });
  const published = {
    jobId: childId,
    status: 'succeeded' as const,
    stopReason: 'answer' as const,
    answer: 'it ran',
    steps: 1,
    toolCalls: 0,
    usage: { promptTokens: 1_000, completionTokens: 100, totalTokens: 1_100, costUsd: 0.013 },
    error: null,
  };
  await new ResultPublisher(results).publish(published);
  const flow = new FlowProducer({ connection: redis, prefix: ns.prefix });
  await flow.add({
    name: 'chain: idle parent',
    queueName: TASKS_QUEUE,
    data: { task: 'idle parent' },
    opts: { jobId: parentId },
    children: [
      {
        name: 'chain: x',
        queueName: TASKS_QUEUE,
        data: {
          agent: 'chain',
          task: 'x',
          budget: { maxTokens: 10_000, maxCostUsd: 0.1, deadlineMs: 60_000 },
          parent: {
            jobId: parentId,
            callKey: `${parentId}:1:1`,
            depth: 1,
            batchId,
            deadlineAt: Date.now() + 60_000,
            hold: held.ticket,
          },
        },
        // Its first delivery was the one that died: this is its second start.
        opts: { jobId: childId, delay: 1_000 },
      },
    ],
  });
  await redis.hset(`${ns.prefix}:${TASKS_QUEUE}:${childId}`, 'ats', '1');
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  await expect.poll(async () => (await tasks.getJob(childId))?.finishedOn, { timeout: 30_000 }).toBeDefined();
  expect(worker.output()).toMatch(/result published already/);
  await expect
    .poll(() => ledger.getSpend(batchScope(batchId)), { timeout: 10_000 })
    .toMatchObject({ liveReservations: 0, reservedMicroUsd: 0, usedMicroUsd: 13_000, usedTokens: 1_100 });
  await Promise.all([flow.close(), results.close(), tasks.close()]);
}, 90_000);
