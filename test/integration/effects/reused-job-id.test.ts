// A job id used again (an idempotency key enqueued again once the first job and its result are gone) is a new
// job: its side effects are its own. Before, the effect ledger, keyed by call key (job id, step, position), found
// the earlier job's `done` row for the same call and sent nothing, reporting the earlier email as this run's.
// Real worker, Redis, MariaDB, the SMTP sink, the scripted model over HTTP.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
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
let sink: SmtpSink;
let ns: FleetNamespace;
let worker: WorkerHandle;
let redis: Redis;

function mailModel(request: RecordedRequest): ScriptedReply | undefined {
  const to = /^Mail (\S+)/.exec(String(request.messages[1]?.content ?? ''))?.[1];
  if (!to) return undefined;
  if (turnsIn(request.messages) > 0) return { answer: `mailed ${to}` };
  return { actions: [{ tool: 'send_email', args: { to, subject: 'Nightly report', body: 'Attached.\n' } }] };
}

setupOrFail(async () => {
  ns = createNamespace('reusedid');
  model = await startScriptedModel({ rules: [mailModel] });
  sink = await startSmtpSink();
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  redis?.disconnect();
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

it('the second job of a reused idempotency key sends its own email', async () => {
  const task = { task: 'Mail ops@example.com', idempotencyKey: 'nightly-report-2026-12-07' };
  const first = await ns.client.enqueue(task);
  await expect(ns.client.waitForResult(first.jobId, { timeoutMs: 30_000 })).resolves.toMatchObject({
    status: 'succeeded',
  });
  expect(sink.messages).toHaveLength(1);
  // Retention removes the job and its result; the same key is enqueued again the next night.
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  const results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: ns.prefix });
  try {
    await (await tasks.getJob(first.jobId))?.remove();
    for (const job of await results.getJobs(['completed', 'waiting', 'active', 'delayed']))
      if (job.data?.jobId === first.jobId) await job.remove();
  } finally {
    await tasks.close();
    await results.close();
  }
  const second = await ns.client.enqueue(task);
  expect(second.jobId).toBe(first.jobId);
  await expect.poll(() => sink.messages.length, { timeout: 30_000 }).toBe(2);
  await expect(ns.client.waitForResult(second.jobId, { timeoutMs: 30_000 })).resolves.toMatchObject({
    status: 'succeeded',
  });
  // The earlier job's rows are kept for the record, no longer under the call's key.
  const rows = await queryStore<{ effect_key: string; status: string }>(
    ns,
    'SELECT effect_key, status FROM effect_ledger WHERE job_id = ? ORDER BY created_at',
    [first.jobId],
  );
  expect(rows).toHaveLength(2);
  expect(rows[0]!.effect_key).toMatch(/^superseded:/);
  expect(rows[1]!.effect_key).not.toMatch(/^superseded:/);
  expect(rows.map((r) => r.status)).toEqual(['done', 'done']);
}, 90_000);
