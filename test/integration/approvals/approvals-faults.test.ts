// Approvals under load and faults, through real workers: 50 jobs parked while a worker of concurrency 1 keeps
// completing others; the worker SIGKILLed right after parking and right after a decision, and a decision made while
// no worker runs (nothing lost, each approved email sent exactly once); a batch-wide approval of 20 emails.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createApiServer } from '../../../producers/http-api.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { emailSubject, emailTask, emailTaskOf, emailTasksModel } from '../../support/email-tasks.js';
import { printFigures } from '../../support/fault-figures.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const TOKEN = 'approvals-faults-token-0123456789';
const silent = pino({ level: 'silent' });
let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
let approvals: ApprovalsHarness;
const workers: WorkerHandle[] = [];

function worker(): WorkerHandle {
  const handle = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    WORKER_CONCURRENCY: '1',
    // A killed job's lock runs out in seconds, and is found as soon.
    WORKER_LOCK_DURATION_MS: '4000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    EMAIL_PENDING_GRACE_MS: '1000',
  });
  workers.push(handle);
  return handle;
}

setupOrFail(async () => {
  ns = createNamespace('approvals-faults');
  sink = await startSmtpSink();
  model = await startScriptedModel({ latencyMs: 20, rules: [emailTasksModel] });
  const first = worker();
  await first.waitForOutput(/worker started/, 60_000);
  approvals = await openApprovals(ns);
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await approvals?.close();
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

const sentWith = (subject: string) => sink.messages.filter((m) => m.subject === subject);
const requestsOf = (name: string) => model.requests.filter((r) => emailTaskOf(r)?.name === name);
const live = () => workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

it('50 jobs parked while a worker of concurrency 1 completes 10 others; then each approved email goes once', async () => {
  const parkedNames = Array.from({ length: 50 }, (_, i) => `park${i}`);
  const parked = await ns.client.enqueueMany(
    parkedNames.map((name) => ({
      task: emailTask(name, 1).task,
      tools: ['send_email'],
      approval: 'side-effects',
    })),
  );
  const pending = await approvals.waitFor({ state: 'pending' }, 50, 120_000);
  const others = await ns.client.enqueueMany(
    Array.from({ length: 10 }, (_, i) => ({ task: emailTask(`free${i}`, 1).task, tools: ['send_email'] })),
  );
  const otherResults = await Promise.all(
    others.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
  );
  expect(otherResults.map((r) => r.status)).toEqual(Array(10).fill('succeeded'));
  // The parked jobs held nothing the others needed, and are all still waiting.
  expect(await approvals.tasks.getDelayedCount()).toBe(50);
  expect((await approvals.desk.list({ state: 'pending', limit: 1_000 })).length).toBe(50);

  const resumeMs: number[] = [];
  const decided = Date.now();
  await Promise.all(
    pending.map(async (approval) => {
      const name = parkedNames[parked.findIndex((p) => p.jobId === approval.jobId)]!;
      const before = requestsOf(name).length;
      const at = Date.now();
      await approvals.desk.decide(approval.id, { decision: 'approve', by: 'ops' });
      const result = await ns.client.waitForResult(approval.jobId, { timeoutMs: 120_000 });
      expect(result.status).toBe('succeeded');
      resumeMs.push(requestsOf(name)[before]!.receivedAt - at);
    }),
  );
  printFigures('approvals parked', {
    parkedAtOnce: 50,
    otherJobsCompletedWhileParked: 10,
    // One worker of concurrency 1 resumes the 50 one after another: queueing, not the wake.
    decisionToResumeMedianMs: median(resumeMs),
    decisionToResumeMaxMs: Math.max(...resumeMs),
    allFiftyResumedInMs: Date.now() - decided,
  });
  for (const name of parkedNames) expect(sentWith(emailSubject(name, 1)), name).toHaveLength(1);
}, 240_000);

it('SIGKILL right after parking, the decision made while no worker runs: resumed once, the email sent once', async () => {
  // A worker of its own, so the line it waits for is this job's parking.
  await Promise.all(live().map(killWorker));
  const { jobId } = await ns.client.enqueue({
    task: emailTask('kp', 1).task,
    tools: ['send_email'],
    approval: 'side-effects',
  });
  const parker = worker();
  await parker.waitForOutput(/awaiting approval/, 60_000);
  await killWorker(parker);
  const [approval] = await approvals.waitFor({ jobId, state: 'pending' }, 1);
  expect(await (await approvals.tasks.getJob(jobId))!.getState()).toBe('delayed');
  // No worker runs: the decision is recorded and the job waits in the queue for the next one.
  await approvals.desk.decide(approval!.id, { decision: 'approve', by: 'ops' });
  expect(await (await approvals.tasks.getJob(jobId))!.getState()).toBe('waiting');
  const next = worker();
  await next.waitForOutput(/worker started/, 60_000);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
  expect(sentWith(emailSubject('kp', 1))).toHaveLength(1);
  // One model call per step: the kill right after parking asked the model nothing again.
  expect(requestsOf('kp')).toHaveLength(2);
}, 120_000);

it('SIGKILL right after a decision: the approved email is sent exactly once, the rejected one never', async () => {
  const names = ['kd1', 'kd2'];
  const jobs = await ns.client.enqueueMany(
    names.map((name) => ({ task: emailTask(name, 1).task, tools: ['send_email'], approval: 'side-effects' })),
  );
  const pending = await approvals.waitFor({ state: 'pending' }, 2, 60_000);
  const byJob = new Map(pending.map((a) => [a.jobId, a]));
  await approvals.desk.decide(byJob.get(jobs[0]!.jobId)!.id, { decision: 'approve', by: 'ops' });
  await approvals.desk.decide(byJob.get(jobs[1]!.jobId)!.id, {
    decision: 'reject',
    by: 'ops',
    reason: 'no',
  });
  await Promise.all(live().map(killWorker));
  worker();
  const results = await Promise.all(
    jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
  );
  expect(results.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
  expect(sentWith(emailSubject('kd1', 1))).toHaveLength(1);
  expect(sentWith(emailSubject('kd2', 1))).toEqual([]);
}, 120_000);

it('a batch-wide approval of 20 emails: the batch is not complete while they wait; then each goes once', async () => {
  const names = Array.from({ length: 20 }, (_, i) => `bw${i}`);
  const { batchId, jobIds } = await ns.client.enqueueBatch({
    tasks: names.map((name) => ({ task: emailTask(name, 1).task, tools: ['send_email'] })),
    approval: 'side-effects',
  });
  await approvals.waitFor({ batchId, state: 'pending' }, 20, 120_000);
  expect((await ns.client.getBatch(batchId))?.state).toBe('running');
  // The API's batch status counts the waiting calls from the store.
  const api = createServer(
    createApiServer({
      client: ns.client,
      tokens: [{ name: 'ops', token: TOKEN }],
      approvals: approvals.desk,
      logger: silent,
    }),
  );
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/v1/batches/${batchId}`;
    const status = await (await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(status).toMatchObject({
      state: 'running',
      approvals: { pending: 20, approved: 0, rejected: 0, expired: 0 },
    });
  } finally {
    await new Promise((resolve) => api.close(resolve));
  }
  const { decided, conflicts } = await approvals.desk.decideBatch({
    batchId,
    tool: 'send_email',
    decision: 'approve',
    by: 'ops',
  });
  expect(decided).toHaveLength(20);
  expect(conflicts).toBe(0);
  const batch = await ns.client.waitForBatch(batchId, { timeoutMs: 120_000 });
  expect(batch.summary).toMatchObject({ tasks: 20, succeeded: 20 });
  expect(jobIds).toHaveLength(20);
  for (const name of names) expect(sentWith(emailSubject(name, 1)), name).toHaveLength(1);
}, 240_000);
