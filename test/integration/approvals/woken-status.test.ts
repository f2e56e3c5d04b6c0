// A woken job no longer says it waits for a person: a job whose calls were decided, then delayed by its worker for
// another reason before its run resumes (its tenant at TENANT_CONCURRENCY), must not be reported
// `awaiting_approval` (the CLI's --wait would ask people to decide calls already decided).
import { afterAll, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { emailTask, emailTasksModel } from '../../support/email-tasks.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
let worker: WorkerHandle;
let approvals: ApprovalsHarness;

setupOrFail(async () => {
  ns = createNamespace('approvals-woken');
  sink = await startSmtpSink();
  // Slow model calls: the other task of the tenant holds its one slot for a while.
  model = await startScriptedModel({ latencyMs: 1_500, rules: [emailTasksModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    WORKER_CONCURRENCY: '2',
    TENANT_CONCURRENCY: '1',
  });
  await worker.waitForOutput(/worker started/, 60_000);
  approvals = await openApprovals(ns);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await approvals?.close();
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

it('a decided job delayed for its tenant slot is not awaiting_approval', async () => {
  const { jobId } = await ns.client.enqueue({
    task: emailTask('wa', 1).task,
    tools: ['send_email'],
    approval: 'side-effects',
    tenant: 'acme',
  });
  const [approval] = await approvals.waitFor({ jobId, state: 'pending' }, 1);
  // The row is written just before the job moves to delayed.
  await expect
    .poll(async () => (await ns.client.getTask(jobId)).state, { timeout: 5_000 })
    .toBe('awaiting_approval');
  // Another task of the tenant takes its only slot.
  const other = await ns.client.enqueue({
    task: emailTask('wb', 1).task,
    tools: ['send_email'],
    tenant: 'acme',
  });
  for (let i = 0; i < 100 && (await ns.client.getTask(other.jobId)).state !== 'active'; i++)
    await new Promise((resolve) => setTimeout(resolve, 50));
  await approvals.desk.decide(approval!.id, { decision: 'approve', by: 'ops' });
  // Taken, then delayed for the tenant: at no point may it say it waits for a person again.
  const states = new Set<string>();
  for (let i = 0; i < 40; i++) {
    states.add((await ns.client.getTask(jobId)).state);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(states.has('awaiting_approval')).toBe(false);
  expect((await ns.client.waitForResult(jobId, { timeoutMs: 60_000 })).status).toBe('succeeded');
  expect(sink.messages.filter((m) => m.to.includes('wa.1@example.com'))).toHaveLength(1);
}, 120_000);
