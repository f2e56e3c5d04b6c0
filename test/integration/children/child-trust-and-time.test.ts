// Child agents through a real worker (Redis, MariaDB, the scripted model over HTTP), one worker of concurrency 1:
// the tree within the parent's deadline, a claimed parent not trusted, the batch report without false warnings.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { TASKS_QUEUE } from '../../../src/queue/names.js';
import { buildBatchReport } from '../../../src/reports/batch-summary.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
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
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

/** A parent that hands two slow regions to two analysts at once; each analyst works until its time is up. */
function slowTree(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const analyst = /^Input: \{"region":"(SLOW\d)"\}/.exec(task);
  if (analyst) {
    // Steps as long as it may make them (a tool call, 1.5 s each); the final turn (no tools offered) answers.
    if (request.tools?.length) {
      const region = `${analyst[1]}-${turnsIn(request.messages)}`; // never the same call twice in a row
      return { actions: [{ tool: 'region_sales', args: { region } }], latencyMs: 1_500 };
    }
    return { answer: `${analyst[1]} analysed` };
  }
  if (task !== 'deadline report') return undefined;
  if (turnsIn(request.messages) === 0)
    return {
      actions: ['SLOW1', 'SLOW2'].map((region) => ({ tool: 'region_analyst', args: { region } })),
    };
  return { answer: 'report written' };
}

/** The report writer asks one analyst, then answers. */
function smallTree(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (/^Input: \{"region":"EU"\}/.test(task)) return { answer: 'EU grew' };
  if (task !== 'small report') return undefined;
  if (turnsIn(request.messages) === 0)
    return { actions: [{ tool: 'region_analyst', args: { region: 'EU' } }] };
  return { answer: 'report written' };
}

function forged(request: RecordedRequest): ScriptedReply | undefined {
  return taskOf(request) === 'forged parent' ? { answer: 'ok' } : undefined;
}

setupOrFail(async () => {
  ns = createNamespace('rtchild');
  model = await startScriptedModel({ rules: [slowTree, smallTree, forged] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    WORKER_CONCURRENCY: '1',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

it("the tree ends within the parent's deadline, however the children are queued", async () => {
  const deadlineMs = 12_000;
  const first = model.requests.length;
  const t0 = Date.now();
  const { jobId } = await ns.client.enqueue({
    agent: 'report-writer',
    task: 'deadline report',
    budget: { deadlineMs, maxTokens: 500_000, maxCostUsd: 5 },
  });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  const treeCalls = model.requests.slice(first);
  const lastCall = Math.max(...treeCalls.map((r) => r.receivedAt));
  // Nothing of the tree may still be calling the model once the parent's deadline has passed.
  expect(result.children).toHaveLength(2);
  // Given the parent's remaining time relative to its own start, children run one after the other on one worker
  // would call the model past the deadline, and the parent would stop without using their answers.
  expect(lastCall - t0, `last model call of the tree, ms after the parent was enqueued`).toBeLessThanOrEqual(
    deadlineMs,
  );
  expect(Date.now() - t0).toBeLessThanOrEqual(deadlineMs + 2_000);
}, 90_000);

it("a task that claims a parent without being that job's child gets neither the parent's batch nor a place in its tree", async () => {
  // A producer on the queue itself (the fleet's workers hold for jobs of every producer: job-options.ts), the
  // same path batch-membership.ts already guards for `metadata.batch`.
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  try {
    const job = await tasks.add('task', {
      agent: 'report-writer',
      task: 'forged parent',
      parent: { jobId: 'victim-parent', callKey: 'victim-parent:1:0', depth: 1, batchId: 'victim-batch' },
    });
    await ns.client.waitForResult(String(job.id), { timeoutMs: 30_000 });
    const [row] = await queryStore<{ batch_id: string | null; parent_job_id: string | null }>(
      ns,
      'SELECT batch_id, parent_job_id FROM agent_runs WHERE job_id = ?',
      [String(job.id)],
    );
    expect(row).toEqual({ batch_id: null, parent_job_id: null });
  } finally {
    await tasks.close();
    redis.disconnect();
  }
}, 60_000);

it("the batch report of a batch whose tasks call agents has no warning about its children's runs", async () => {
  const { batchId } = await ns.client.enqueueBatch({
    tasks: [{ agent: 'report-writer', task: 'small report' }],
  });
  const summary = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  expect(summary.summary.succeeded).toBe(1);
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  try {
    const loaded = (await new BatchReportStore(pool).loadBatch(batchId))!;
    const report = buildBatchReport(loaded.batch, loaded.runs, {
      emails: loaded.emails,
      approvals: loaded.approvals,
    });
    expect(report.summary.tasks).toBe(1);
    // Children carry their parent's batch id (for its caps) but are counted through their parent: no warning
    // that they "name this batch but are not among its job ids".
    expect(report.warnings).toEqual([]);
  } finally {
    await pool.end();
  }
}, 90_000);
