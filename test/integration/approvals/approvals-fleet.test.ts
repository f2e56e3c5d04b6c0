// Approvals through a real worker (Redis, MariaDB, an SMTP sink, the scripted model over HTTP): a task whose call
// needs a decision parks in BullMQ's `delayed` state holding no worker slot, and the desk's decision (the one the
// API, the CLI and the console make) wakes it at once: approved, the email goes out exactly once, with edited
// arguments if the approver changed them; rejected or expired, it never does and the model reads why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { CheckpointStore } from '../../../src/worker/checkpoint-store.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import { emailSubject, emailTask, emailTaskOf, emailTasksModel } from '../../support/email-tasks.js';
import { printFigures } from '../../support/fault-figures.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { approvalEventJobId } from '../../../src/approvals/approval-events.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { expectNativeTranscript } from '../../support/native-transcript.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { Redis } from 'ioredis';

let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
let worker: WorkerHandle;
let approvals: ApprovalsHarness;
const data = new SeededDataDatabase('appr');

/** `mixed turn <name>`: one turn of two read-only calls and an email, then the answer. */
function mixedTurnModel(request: Parameters<typeof emailTasksModel>[0]) {
  const match = /^mixed turn (\S+)/.exec(String(request.messages[1]?.content ?? ''));
  if (!match) return undefined;
  if (turnsIn(request.messages) > 0) return { answer: `${match[1]} done` };
  return {
    actions: [
      { tool: 'list_tables', args: {} },
      { tool: 'describe_table', args: { table: 'orders' } },
      {
        tool: 'send_email',
        args: { to: `${match[1]}@example.com`, subject: `mixed ${match[1]}`, body: 'Hi.\n' },
      },
    ],
  };
}

/** `email to <address>`: one email to that address (its subject names it), then the answer. */
function emailToModel(request: Parameters<typeof emailTasksModel>[0]) {
  const match = /^email to (\S+)/.exec(String(request.messages[1]?.content ?? ''));
  if (!match) return undefined;
  if (turnsIn(request.messages) > 0) return { answer: `emailed ${match[1]}` };
  return {
    actions: [{ tool: 'send_email', args: { to: match[1], subject: `to ${match[1]}`, body: 'Hello.\n' } }],
  };
}

setupOrFail(async () => {
  ns = createNamespace('approvals');
  await data.seed();
  sink = await startSmtpSink();
  model = await startScriptedModel({ rules: [emailTasksModel, mixedTurnModel, emailToModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    DATA_MYSQL_URL: data.readerUrl(),
    WORKER_CONCURRENCY: '1',
  });
  await worker.waitForOutput(/worker started/, 60_000);
  approvals = await openApprovals(ns);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await approvals?.close();
  await ns?.cleanup();
  const root = data.rootPool();
  await data.drop(root).finally(() => root.end());
  await sink?.close();
  await model?.close();
});

const sentWith = (subject: string) => sink.messages.filter((m) => m.subject === subject);
const requestsOf = (name: string) => model.requests.filter((r) => emailTaskOf(r)?.name === name);

async function enqueueEmail(name: string, extra: Record<string, unknown> = {}) {
  const { jobId } = await ns.client.enqueue({
    task: emailTask(name, 1).task,
    tools: ['send_email'],
    approval: 'side-effects',
    ...extra,
  });
  const [approval] = await approvals.waitFor({ jobId, state: 'pending' }, 1);
  return { jobId, approval: approval! };
}

it('approved: parked in delayed without a slot, woken by the decision, the email sent exactly once', async () => {
  const { jobId, approval } = await enqueueEmail('ap1');
  expect(approval).toMatchObject({
    jobId,
    tool: 'send_email',
    step: 1,
    state: 'pending',
    arguments: { to: 'ap1.1@example.com', subject: emailSubject('ap1', 1) },
    decidedBy: null,
  });
  expect(Date.parse(approval.expiresAt) - Date.parse(approval.requestedAt)).toBe(86_400_000);
  // The row is written just before the job moves to delayed.
  await expect
    .poll(async () => (await approvals.tasks.getJob(jobId))?.getState(), { timeout: 5_000 })
    .toBe('delayed');
  const parked = (await approvals.tasks.getJob(jobId))!;
  expect(parked.progress).toMatchObject({
    status: 'awaiting_approval',
    approvals: [{ id: approval.id, tool: 'send_email' }],
  });
  expect(await approvals.tasks.getActiveCount()).toBe(0);
  expect(sentWith(emailSubject('ap1', 1))).toEqual([]);
  // The event a team's notifier consumes.
  const requested = (await approvals.events.getJobs(['waiting'])).find(
    (e) => e.data.approvalId === approval.id,
  );
  expect(requested?.name).toBe('approval.requested');
  expect(requested?.data).toMatchObject({ type: 'approval.requested', jobId, tool: 'send_email' });

  const before = requestsOf('ap1').length;
  const decidedAt = Date.now();
  const outcome = await approvals.desk.decide(approval.id, { decision: 'approve', by: 'alice' });
  expect(outcome).toMatchObject({ kind: 'decided', approval: { state: 'approved', decidedBy: 'alice' } });
  const result: AgentResult = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  const resumedAt = requestsOf('ap1')[before]!.receivedAt;
  printFigures('approval', { decisionToNextModelCallMs: resumedAt - decidedAt });
  expect(resumedAt - decidedAt).toBeLessThan(5_000);
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', steps: 2, toolCalls: 1 });
  expect(sentWith(emailSubject('ap1', 1))).toHaveLength(1);
  expectNativeTranscript(requestsOf('ap1'));
  // The trace keeps who decided and when.
  const [step] = await queryStore<{ events: unknown }>(
    ns,
    'SELECT events FROM agent_steps WHERE job_id = ? AND step = 1',
    [jobId],
  );
  const events = typeof step!.events === 'string' ? JSON.parse(step!.events) : step!.events;
  expect(events).toEqual([
    expect.objectContaining({ type: 'approval', tool: 'send_email', decision: 'approve', by: 'alice' }),
  ]);
  // Deciding again changes nothing: the first decision stands.
  const again = await approvals.desk.decide(approval.id, {
    decision: 'reject',
    by: 'mallory',
    reason: 'late',
  });
  expect(again).toMatchObject({ kind: 'conflict', approval: { state: 'approved', decidedBy: 'alice' } });
  expect(await approvals.desk.decide('apr_nope', { decision: 'approve', by: 'alice' })).toEqual({
    kind: 'not_found',
  });
});

it('approved with edited arguments: the email goes out as edited; an edit the schema refuses names the field', async () => {
  const { jobId, approval } = await enqueueEmail('ap2');
  const bad = await approvals.desk.decide(approval.id, {
    decision: 'approve',
    by: 'alice',
    arguments: { to: 5, subject: 's', body: 'b' },
  });
  expect(bad).toMatchObject({ kind: 'invalid', issues: [expect.objectContaining({ path: 'arguments.to' })] });
  const edited = { to: 'ap2.1@example.com', subject: 'edited by alice', body: 'Shorter.\n' };
  const ok = await approvals.desk.decide(approval.id, {
    decision: 'approve',
    by: 'alice',
    arguments: edited,
  });
  expect(ok).toMatchObject({ kind: 'decided', approval: { editedArguments: edited } });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result.status).toBe('succeeded');
  expect(sentWith('edited by alice')).toHaveLength(1);
  expect(sentWith(emailSubject('ap2', 1))).toEqual([]);
});

it('rejected: never sent; the model reads who rejected it and why, and answers within its budget', async () => {
  const { jobId, approval } = await enqueueEmail('ap3');
  await approvals.desk.decide(approval.id, { decision: 'reject', by: 'bob', reason: 'not this customer' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer' });
  expect(sentWith(emailSubject('ap3', 1))).toEqual([]);
  const last = requestsOf('ap3').at(-1)!;
  expect(last.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
    'rejected by bob: not this customer',
  ]);
  expectNativeTranscript(requestsOf('ap3'));
});

it('expired: the job wakes by itself at the expiry, the call is rejected as expired and never runs', async () => {
  const { jobId, approval } = await enqueueEmail('ap4', { approvalTimeoutMs: 1_500 });
  expect(Date.parse(approval.expiresAt) - Date.parse(approval.requestedAt)).toBe(1_500);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result.status).toBe('succeeded');
  expect(sentWith(emailSubject('ap4', 1))).toEqual([]);
  // Told by the worker that expired it, before anyone looks at the call (a look expires it too).
  const event = await approvals.events.getJob(approvalEventJobId('approval.decided', approval.id));
  expect(event?.data).toMatchObject({ approvalId: approval.id, state: 'expired', reason: 'expired' });
  expect(await approvals.desk.get(approval.id)).toMatchObject({
    state: 'expired',
    decision: 'reject',
    reason: 'expired',
  });
  const last = requestsOf('ap4').at(-1)!;
  expect(last.messages.find((m) => m.role === 'tool')?.content).toMatch(/^rejected by timeout: expired/);
});

it('one call needing approval beside two that do not: those run at once, the turn goes on when decided', async () => {
  const { jobId } = await ns.client.enqueue({
    task: 'mixed turn mx1',
    tools: ['list_tables', 'describe_table', 'send_email'],
    approval: 'side-effects',
  });
  const [approval] = await approvals.waitFor({ jobId, state: 'pending' }, 1);
  expect(approval).toMatchObject({ tool: 'send_email' });
  const redis = new Redis(REDIS_URL);
  try {
    const state = await new CheckpointStore(redis, ns.prefix).load(jobId);
    expect(state?.pending?.results.map((r) => r?.tool ?? null)).toEqual([
      'list_tables',
      'describe_table',
      null,
    ]);
    expect(state?.pending?.results[0]?.output).toContain('orders');
  } finally {
    redis.disconnect();
  }
  await approvals.desk.decide(approval!.id, { decision: 'approve', by: 'carol' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'succeeded', steps: 2, toolCalls: 3 });
  expect(sentWith('mixed mx1')).toHaveLength(1);
});

it('a wait longer than the deadline: the time waiting for a person is not the run time', async () => {
  const { jobId, approval } = await enqueueEmail('ap5', { budget: { deadlineMs: 2_000 } });
  await new Promise((resolve) => setTimeout(resolve, 3_500));
  await approvals.desk.decide(approval.id, { decision: 'approve', by: 'dan' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer' });
  expect(sentWith(emailSubject('ap5', 1))).toHaveLength(1);
});

describe('rules of a fleet of its own', () => {
  let own: WorkerHandle;
  let ownNs: FleetNamespace;
  let ownApprovals: ApprovalsHarness;

  beforeAll(async () => {
    ownNs = createNamespace('approvals-own');
    own = startWorker(ownNs, {
      OPENAI_BASE_URL: model.baseURL,
      SMTP_URL: sink.url,
      SMTP_LOOKUP_URL: sink.lookupUrl,
      FLEET_CONFIG: 'test/fixtures/fleets/approvals.config.ts',
    });
    await own.waitForOutput(/worker started/, 60_000);
    ownApprovals = await openApprovals(ownNs);
  }, 90_000);

  afterAll(async () => {
    if (own) await killWorker(own);
    await ownApprovals?.close();
    await ownNs?.cleanup();
  });

  it("send_email's own rule: a recipient inside the domain goes at once, one outside waits", async () => {
    const [inside, outside] = await ownNs.client.enqueueMany([
      { agent: 'mailer', task: 'email to ok@example.com' },
      { agent: 'mailer', task: 'email to someone@partner.org' },
    ]);
    const insideResult = await ownNs.client.waitForResult(inside!.jobId, { timeoutMs: 30_000 });
    expect(insideResult.status).toBe('succeeded');
    expect(sentWith('to ok@example.com')).toHaveLength(1);
    const [waiting] = await ownApprovals.waitFor({ jobId: outside!.jobId, state: 'pending' }, 1);
    expect(waiting).toMatchObject({ tool: 'send_email', arguments: { to: 'someone@partner.org' } });
    expect(sentWith('to someone@partner.org')).toEqual([]);
    await ownApprovals.desk.decide(waiting!.id, { decision: 'approve', by: 'erin' });
    expect((await ownNs.client.waitForResult(outside!.jobId, { timeoutMs: 30_000 })).status).toBe(
      'succeeded',
    );
    expect(sentWith('to someone@partner.org')).toHaveLength(1);
  });

  it("an agent's own policy and timeout: every email waits, and expires after the agent's two seconds", async () => {
    const { jobId } = await ownNs.client.enqueue({
      agent: 'careful-mailer',
      task: 'email to late@example.com',
    });
    const [waiting] = await ownApprovals.waitFor({ jobId, state: 'pending' }, 1);
    expect(Date.parse(waiting!.expiresAt) - Date.parse(waiting!.requestedAt)).toBe(2_000);
    const result = await ownNs.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result.status).toBe('succeeded');
    expect(sentWith('to late@example.com')).toEqual([]);
    expect((await ownApprovals.desk.get(waiting!.id))?.state).toBe('expired');
  });
});
