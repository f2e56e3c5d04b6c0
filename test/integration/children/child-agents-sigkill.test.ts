// Agents that call agents across a crash: the worker running the parent is SIGKILLed right after it enqueued its
// children, and the worker running a child right as its email arrives; another worker takes over. Each child runs
// once (its job id derives from the call), the parent resumes once, and a child's email goes exactly once.
import { afterAll, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
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
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let sink: SmtpSink;
let onEmail: () => void = () => undefined;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

function reportModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const analyst = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (analyst) return { answer: `${analyst[1]} sales grew` };
  if (!task.startsWith('report on regions')) return undefined;
  if (turnsIn(request.messages) === 0)
    return { actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'region_analyst', args: { region } })) };
  const results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  return { answer: `report: ${results.join(' | ')}` };
}

/** A campaign has two notifiers each email one person; a notifier sends its email, then answers. */
function campaignModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const notify = /^notify (\S+)/.exec(task);
  if (notify) {
    if (turnsIn(request.messages) > 0) return { answer: `notified ${notify[1]}` };
    const to = `${notify[1]}@example.com`;
    return {
      actions: [{ tool: 'send_email', args: { to, subject: `campaign ${notify[1]}`, body: 'Hello.\n' } }],
    };
  }
  const campaign = /^campaign (\S+)/.exec(task);
  if (!campaign) return undefined;
  if (turnsIn(request.messages) > 0) return { answer: `campaign ${campaign[1]} done` };
  return {
    actions: [1, 2].map((i) => ({ tool: 'notifier', args: { task: `notify ${campaign[1]}-${i}` } })),
  };
}

function worker(): WorkerHandle {
  const handle = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    EMAIL_PENDING_GRACE_MS: '1000',
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    WORKER_CONCURRENCY: '1',
    // A killed job's lock runs out in seconds, and is found as soon.
    WORKER_LOCK_DURATION_MS: '4000',
    WORKER_STALLED_INTERVAL_MS: '1000',
  });
  workers.push(handle);
  return handle;
}

setupOrFail(async () => {
  ns = createNamespace('children-kill');
  model = await startScriptedModel({ rules: [reportModel, campaignModel] });
  sink = await startSmtpSink({ onMessage: () => onEmail() });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

it('SIGKILL of the parent right after its children were enqueued: each child once, the parent resumes once', async () => {
  const first = worker();
  await first.waitForOutput(/worker started/, 60_000);
  const { jobId } = await ns.client.enqueue({ agent: 'report-writer', task: 'report on regions' });
  await first.waitForOutput(/waiting for child agents/, 30_000);
  await killWorker(first);
  const second = worker();
  await second.waitForOutput(/worker started/, 60_000);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 90_000 });
  expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
  expect(result.answer).toBe('report: EU sales grew | US sales grew | APAC sales grew');
  expect(result.children).toHaveLength(3);
  const asked = (pattern: RegExp) => model.requests.filter((r) => pattern.test(taskOf(r))).length;
  // Each child is one job and one run, however the kill fell: the resumed parent started none again.
  const runs = await queryStore<{ job_id: string }>(
    ns,
    'SELECT job_id FROM agent_runs WHERE parent_job_id = ?',
    [jobId],
  );
  expect(runs.map((r) => r.job_id).sort()).toEqual(result.children!.map((c) => c.jobId).sort());
  // Each child's model call once, or twice for the one child the killed worker may have taken in the moment
  // between the parent leaving its slot and the kill (then asked again where it resumed); the parent's first call
  // once and its resumed call once.
  const asks = ['EU', 'US', 'APAC'].map((region) => asked(new RegExp(`"region":"${region}"`)));
  for (const n of asks) expect(n).toBeGreaterThanOrEqual(1);
  expect(asks.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(4);
  expect(model.requests.filter((r) => taskOf(r).startsWith('report on regions'))).toHaveLength(2);
}, 180_000);

it("SIGKILL of the worker running a child as its email arrives: each child's email exactly once", async () => {
  const running = workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
  const victim = running[0] ?? worker();
  await victim.waitForOutput(/worker started/, 60_000);
  let killed: Promise<void> | undefined;
  onEmail = () => {
    killed ??= killWorker(victim);
  };
  const { jobId } = await ns.client.enqueue({ agent: 'campaign', task: 'campaign spring' });
  await expect.poll(() => killed !== undefined, { timeout: 30_000 }).toBe(true);
  await killed;
  onEmail = () => undefined;
  const next = worker();
  await next.waitForOutput(/worker started/, 60_000);
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 90_000 });
  expect(result).toMatchObject({ status: 'succeeded', answer: 'campaign spring done' });
  expect(result.children?.map((c) => c.status)).toEqual(['succeeded', 'succeeded']);
  for (const i of [1, 2]) {
    expect(
      sink.messages.filter((m) => m.subject === `campaign spring-${i}`),
      `email ${i}`,
    ).toHaveLength(1);
  }
}, 180_000);
