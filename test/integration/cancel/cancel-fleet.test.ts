// Cancelling tasks through real workers (Redis, MariaDB, the scripted model over HTTP, two worker processes): a
// cancel made anywhere ends the task with `status: "stopped"`, `stopReason: "cancelled"`, published and recorded
// like any result, and no model call is made for it after the cancel: waiting (it never runs one), running on
// either worker (stopped mid-call, with what it spent; a tool call in flight gets its signal aborted), parked for
// approval (woken, its approval withdrawn), and a parent waiting for its children (each child stopped, then the
// parent, its usage the tree's).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { cancelMarkKey } from '../../../src/queue/cancel-marks.js';
import { EVENTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
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
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

/** How long the model holds the replies the tests cancel during: far longer than any test waits. */
const HOLD_MS = 60_000;

const toolLog = join(tmpdir(), `cancel-tool-${randomBytes(4).toString('hex')}.log`);
const toolLines = () => (existsSync(toolLog) ? readFileSync(toolLog, 'utf8').trim().split('\n') : []);

let model: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

/**
 * `hold <name>`: a note, then an answer held for HOLD_MS. `ask <name>`: the approved act, then an answer. A
 * helper notes its region, then holds its answer; the boss asks three helpers, then answers.
 */
function cancelModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const turns = turnsIn(request.messages);
  if (/^(hold|quick) /.test(task)) {
    if (turns === 0) return { actions: [{ tool: 'note', args: { text: task } }] };
    return { answer: `${task} done`, ...(task.startsWith('hold') ? { latencyMs: HOLD_MS } : {}) };
  }
  if (task.startsWith('tool ')) {
    if (turns === 0) return { actions: [{ tool: 'wait_for_stop', args: { name: task } }] };
    return { answer: `${task} done` };
  }
  if (task.startsWith('ask ')) {
    const slow = task.startsWith('ask slow') ? { latencyMs: 1_500 } : {};
    if (turns === 0) return { actions: [{ tool: 'act', args: { what: task } }], ...slow };
    return { answer: `${task} done` };
  }
  const helper = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (helper) {
    if (turns === 0) return { actions: [{ tool: 'note', args: { text: helper[1]! } }] };
    return { answer: `${helper[1]} grew`, latencyMs: HOLD_MS };
  }
  if (task.startsWith('boss ')) {
    const slow = task.startsWith('boss slow') ? { latencyMs: 1_500 } : {};
    if (turns === 0)
      return {
        actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'helper', args: { region } })),
        ...slow,
      };
    return { answer: 'report' };
  }
  return undefined;
}

const requestsFor = (prefix: string) => model.requests.filter((r) => taskOf(r).startsWith(prefix));

async function until<T>(what: string, read: () => Promise<T | undefined> | T | undefined, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** After a cancelled result: no model call for the given tasks for a while longer. */
async function expectNoMoreCalls(prefixes: string[], count: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(prefixes.reduce((sum, p) => sum + requestsFor(p).length, 0)).toBe(count);
}

function startWorkers(): Promise<void[]> {
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: model.baseURL,
        FLEET_CONFIG: 'test/fixtures/fleets/cancel.config.ts',
        WORKER_CONCURRENCY: '2',
        CANCEL_TOOL_LOG: toolLog,
      }),
    );
  }
  return Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
}

setupOrFail(async () => {
  ns = createNamespace('cancel');
  model = await startScriptedModel({ rules: [cancelModel] });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => killWorker(w)));
  await ns?.cleanup();
  await model?.close();
  rmSync(toolLog, { force: true });
});

it('a waiting task, cancelled before any worker takes it, ends cancelled without a model call', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'worker', task: 'quick waiting' });
  const cancel = await ns.client.cancelTask(jobId, { by: 'tester' });
  expect(cancel).toEqual({ outcome: 'cancelling', state: 'waiting', children: 0 });
  // Once more changes nothing (the first cancel says who).
  expect(await ns.client.cancelTask(jobId, { by: 'someone else' })).toMatchObject({ outcome: 'cancelling' });
  await startWorkers();
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 0, answer: null });
  expect(result.usage.totalTokens).toBe(0);
  expect(result.stopDetail).toMatch(/^cancelled by tester at /);
  expect(requestsFor('quick waiting')).toHaveLength(0);
  const [row] = await queryStore<{ status: string; stop_reason: string; stop_detail: string }>(
    ns,
    'SELECT status, stop_reason, stop_detail FROM agent_runs WHERE job_id = ?',
    [jobId],
  );
  expect(row).toMatchObject({ status: 'stopped', stop_reason: 'cancelled' });
  expect(row?.stop_detail).toMatch(/^cancelled by tester/);
  // Finished: a cancel now answers with its result.
  expect(await ns.client.cancelTask(jobId)).toMatchObject({ outcome: 'finished', result });
  expect(await ns.client.cancelTask('no-such-job')).toEqual({ outcome: 'unknown' });
}, 90_000);

it('a running task is stopped mid-call by its worker, whichever it is: what it spent, no further call', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'worker', task: 'hold mid-run' });
  // Its second model call is in flight (held by the model): the run is between its two calls.
  await until('the second call', () => requestsFor('hold mid-run').length === 2);
  const cancel = await ns.client.cancelTask(jobId);
  expect(cancel).toMatchObject({ outcome: 'cancelling', state: 'active' });
  const started = Date.now();
  const result: AgentResult = await ns.client.waitForResult(jobId, { timeoutMs: 10_000 });
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1, toolCalls: 1 });
  expect(result.stopDetail).toMatch(/^cancelled by client/);
  // At least the first call, which the model served and reported.
  const served = requestsFor('hold mid-run')[0]!.usage!;
  expect(result.usage.promptTokens).toBeGreaterThanOrEqual(served.promptTokens);
  expect(result.usage.costUsd).toBeGreaterThan(0);
  const stopped = (w: WorkerHandle) =>
    w
      .output()
      .split('\n')
      .some((line) => line.includes('stopping the run') && line.includes(`"${jobId}"`));
  expect(workers.filter(stopped)).toHaveLength(1);
  await expectNoMoreCalls(['hold mid-run'], 2);
}, 60_000);

it('a tool call in flight gets the abort signal, and the run ends at once, the call left unfinished', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'worker', task: 'tool in flight' });
  await until('the tool started', () => toolLines().includes('started tool in flight'));
  await ns.client.cancelTask(jobId);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 10_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1, toolCalls: 1 });
  expect(toolLines()).toContain('aborted tool in flight');
  await expectNoMoreCalls(['tool in flight'], 1);
}, 60_000);

it('a task parked for approval is woken and ends cancelled; its approval is withdrawn, the tool never runs', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'careful', task: 'ask parked' });
  await until('parked', async () => (await ns.client.getTask(jobId)).state === 'awaiting_approval');
  const cancel = await ns.client.cancelTask(jobId, { by: 'ops' });
  expect(cancel).toMatchObject({ outcome: 'cancelling', state: 'awaiting_approval' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 15_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1, toolCalls: 1 });
  expect(result.stopDetail).toMatch(/^cancelled by ops/);
  const approvals = await queryStore<{ state: string; reason: string }>(
    ns,
    'SELECT state, reason FROM agent_approvals WHERE job_id = ?',
    [jobId],
  );
  expect(approvals).toEqual([{ state: 'expired', reason: 'cancelled' }]);
  // Whoever was asked to decide is told there is nothing left to decide.
  expect(await decidedEventsOf(jobId)).toEqual([{ state: 'expired', reason: 'cancelled' }]);
  await expectNoMoreCalls(['ask parked'], 1);
}, 60_000);

/** The `approval.decided` events on agent-events of a job's calls: their state and reason. */
async function decidedEventsOf(jobId: string): Promise<{ state: string; reason: string | null }[]> {
  const redis = new Redis(REDIS_URL);
  const events = new Queue(EVENTS_QUEUE, { connection: redis, prefix: ns.prefix });
  try {
    const jobs = await events.getJobs(['waiting']);
    return jobs
      .filter((job) => job.name === 'approval.decided' && job.data.jobId === jobId)
      .map((job) => ({ state: String(job.data.state), reason: job.data.reason as string | null }));
  } finally {
    await events.close();
    redis.disconnect();
  }
}

it('a parent waiting for its children: each child is stopped, then the parent, its usage the tree’s', async () => {
  const first = model.requests.length;
  const { jobId } = await ns.client.enqueue({ agent: 'boss', task: 'boss tree' });
  // The parent waits off the workers; its three children are each in their held second call.
  await until(
    'the children held',
    () => requestsFor('Input: {"region"').filter((r) => r.index >= first).length === 6,
  );
  expect((await ns.client.getTask(jobId)).state).toBe('waiting-children');
  const cancel = await ns.client.cancelTask(jobId);
  expect(cancel).toEqual({ outcome: 'cancelling', state: 'waiting-children', children: 3 });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1, toolCalls: 3 });
  expect(result.children?.map((c) => [c.agent, c.status, c.stopReason])).toEqual([
    ['helper', 'stopped', 'cancelled'],
    ['helper', 'stopped', 'cancelled'],
    ['helper', 'stopped', 'cancelled'],
  ]);
  for (const child of result.children ?? []) {
    const own = await ns.client.getResult(child.jobId);
    expect(own).toMatchObject({ status: 'stopped', stopReason: 'cancelled' });
    expect(own?.stopDetail).toMatch(new RegExp(`its parent job ${jobId} was cancelled`));
  }
  const childCost = (result.children ?? []).reduce((sum, c) => sum + c.usage.costUsd, 0);
  expect(childCost).toBeGreaterThan(0);
  expect(result.usage.costUsd).toBeGreaterThan(childCost);
  // One call of the parent, two of each child: none after the cancel.
  const tree = () => model.requests.slice(first).length;
  expect(tree()).toBe(7);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(tree()).toBe(7);
}, 90_000);

/**
 * A cancel that lands while the run is about to park: its mark is written (as a canceller does first) but its
 * worker is not told, as when the canceller found the job still active. The worker looks once more after parking.
 */
async function markOnly(jobId: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  try {
    const job = await tasks.getJob(jobId);
    const mark = { by: 'racer', at: Date.now(), instance: String(job!.timestamp) };
    await redis.set(cancelMarkKey(ns.prefix, jobId), JSON.stringify(mark), 'EX', 600);
  } finally {
    await tasks.close();
    redis.disconnect();
  }
}

it('a cancel that lands as a run parks for approval: its worker wakes it after parking', async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'careful', task: 'ask slow race' });
  await until('its call', () => requestsFor('ask slow race').length === 1);
  await markOnly(jobId);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 15_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1 });
  expect(result.stopDetail).toMatch(/^cancelled by racer/);
  const approvals = await queryStore<{ state: string; reason: string }>(
    ns,
    'SELECT state, reason FROM agent_approvals WHERE job_id = ?',
    [jobId],
  );
  expect(approvals).toEqual([{ state: 'expired', reason: 'cancelled' }]);
}, 60_000);

it('a cancel that lands as a parent starts its children: they end cancelled without a call, then the parent', async () => {
  const first = model.requests.length;
  const { jobId } = await ns.client.enqueue({ agent: 'boss', task: 'boss slow race' });
  await until('its call', () => requestsFor('boss slow race').length === 1);
  await markOnly(jobId);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1, toolCalls: 3 });
  expect(result.children?.map((c) => [c.status, c.stopReason, c.usage.totalTokens])).toEqual([
    ['stopped', 'cancelled', 0],
    ['stopped', 'cancelled', 0],
    ['stopped', 'cancelled', 0],
  ]);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(model.requests.slice(first)).toHaveLength(1);
}, 60_000);
