// Emails across crashes and shutdowns, end to end: real worker processes, the real MariaDB ledger, the real
// SMTP sink holding its reply at a chosen stage (so a worker can be killed at a known point of a send), and the
// scripted model. Each email is delivered exactly once, or the result and the batch report say it may not be.
import { turnsIn } from '../../../src/testing/transcript.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { freePort } from '../../../src/demo/free-port.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
import { buildBatchReport } from '../../../src/reports/batch-summary.js';
import { createStorePool } from '../../../src/store/pool.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import type { RecordedRequest, ScriptedReply } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];
const sinks: SmtpSink[] = [];
const releases: (() => void)[] = [];

/** "mail <name>": send one email to <name>@example.com, then answer. */
function mailModel(request: RecordedRequest): ScriptedReply {
  const task = String(request.messages[1]?.content ?? '');
  const name = /mail (\w+)/.exec(task)?.[1] ?? 'nobody';
  const observed = turnsIn(request.messages);
  if (observed === 0) {
    return {
      actions: [
        { tool: 'send_email', args: { to: `${name}@example.com`, subject: 'Thanks', body: `Dear ${name}` } },
      ],
    };
  }
  return { answer: `mailed ${name}` };
}

/** A sink that holds its reply at `stage` for its first session only, until `release()`. */
async function holdingSink(stage: 'rcpt' | 'data'): Promise<{ sink: SmtpSink; release: () => void }> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const sink = await startSmtpSink({
    holdReply: (at) => {
      if (at !== stage || !first) return undefined;
      first = false;
      return gate;
    },
  });
  sinks.push(sink);
  releases.push(release);
  return { sink, release };
}

function worker(env: Record<string, string>): WorkerHandle {
  const handle = startWorker(ns, {
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'json',
    AGENT_MAX_COST_USD: '1',
    EMAIL_PENDING_GRACE_MS: '4000',
    METRICS_PORT: '0',
    ...env,
  });
  workers.push(handle);
  return handle;
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface LedgerRow {
  status: string;
  attempt: number;
  started_at: Date | null;
  smtp_response: string | null;
  ref: string;
}
/** send_email's rows of the effect ledger: `done` is sent, `started_at` the hand-off to SMTP, `ref` the Message-ID. */
const ledgerOf = (jobId: string) =>
  queryStore<LedgerRow>(
    ns,
    `SELECT status, attempt, started_at, JSON_VALUE(result, '$.smtpResponse') AS smtp_response, ref
     FROM effect_ledger WHERE job_id = ? AND tool = 'send_email'`,
    [jobId],
  );
const delivered = (sink: SmtpSink, to: string) => sink.messages.filter((m) => m.to.includes(to));

beforeAll(async () => {
  server = await startScriptedModel({ rules: [mailModel] });
  ns = createNamespace('effects');
});

afterAll(async () => {
  for (const release of releases) release();
  await Promise.all(workers.map(killWorker));
  await Promise.all(sinks.map((sink) => sink.close()));
  await ns.cleanup();
  await server.close();
});

describe('a worker killed in the middle of a send', () => {
  it('after the server took the message: the resumed job confirms it by lookup and does not send again', async () => {
    const { sink } = await holdingSink('data');
    // A grace longer than the resume takes: the resumed call meets the row while it is still young.
    const env = { SMTP_URL: sink.url, SMTP_LOOKUP_URL: sink.lookupUrl, EMAIL_PENDING_GRACE_MS: '12000' };
    const doomed = worker(env);
    const { jobId } = await ns.client.enqueue({ task: 'mail ada', tools: ['send_email'] });
    // The sink has the message; its 250 is held, so the ledger still says pending.
    await until(() => delivered(sink, 'ada@example.com').length === 1, 'the message at the sink');
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const [crashed] = await ledgerOf(jobId);
    expect(crashed).toMatchObject({ status: 'pending' });
    expect(crashed?.started_at).not.toBeNull();

    const rescuer = worker(env);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 45_000 });
    expect(rescuer.output()).toMatch(/resuming from checkpoint/);
    expect(result).toMatchObject({ status: 'succeeded', answer: 'mailed ada' });
    expect(result.uncertainEffects).toBeUndefined();
    expect(delivered(sink, 'ada@example.com')).toHaveLength(1);
    expect(await ledgerOf(jobId)).toMatchObject([{ status: 'done', attempt: 1 }]);
    await killWorker(rescuer);
  }, 90_000);

  it('before the message was transmitted: the resumed job learns it never arrived and sends it, once', async () => {
    const { sink } = await holdingSink('rcpt');
    const env = { SMTP_URL: sink.url, SMTP_LOOKUP_URL: sink.lookupUrl };
    const doomed = worker(env);
    const { jobId } = await ns.client.enqueue({ task: 'mail bob', tools: ['send_email'] });
    await until(async () => (await ledgerOf(jobId))[0]?.started_at != null, 'the handed-off row');
    // Let the client reach RCPT, where the sink holds it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    expect(delivered(sink, 'bob@example.com')).toHaveLength(0);

    const rescuer = worker(env);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 45_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'mailed bob' });
    expect(result.uncertainEffects).toBeUndefined();
    expect(delivered(sink, 'bob@example.com')).toHaveLength(1);
    // The second attempt of the call sent it, under the same Message-ID.
    const [row] = await ledgerOf(jobId);
    expect(row).toMatchObject({ status: 'done', attempt: 2 });
    expect(delivered(sink, 'bob@example.com')[0]?.messageId).toBe(row?.ref);
    await killWorker(rescuer);
  }, 90_000);
});

describe('SIGTERM during a send', () => {
  it('waits for the send in flight to finish and be recorded before exiting; the resumed job does not resend', async () => {
    const { sink, release } = await holdingSink('data');
    // No lookup: only the ledger row recorded before exit can keep the resumed job from guessing.
    const env = { SMTP_URL: sink.url, WORKER_SHUTDOWN_GRACE_MS: '3000' };
    const first = worker(env);
    const { jobId } = await ns.client.enqueue({ task: 'mail cy', tools: ['send_email'] });
    await until(() => delivered(sink, 'cy@example.com').length === 1, 'the message at the sink');
    first.child.kill('SIGTERM');
    // The run is cancelled at the grace's end and released; the send it abandoned is still waited for.
    await first.waitForOutput(/waiting for side effects in flight/, 20_000);
    release();
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(first.output()).toMatch(/released on shutdown/);
    const [row] = await ledgerOf(jobId);
    expect(row?.status).toBe('done');
    expect(row?.smtp_response).toMatch(/^250/);

    const second = worker(env);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 45_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'mailed cy' });
    expect(result.uncertainEffects).toBeUndefined();
    expect(delivered(sink, 'cy@example.com')).toHaveLength(1);
    await killWorker(second);
  }, 90_000);
});

describe('an email whose delivery cannot be known', () => {
  it('ends in a result that says so, and the batch report lists it', async () => {
    const { sink } = await holdingSink('data');
    // The lookup's port has nothing listening: it cannot answer.
    const lookupUrl = `http://127.0.0.1:${await freePort(0)}/delivered`;
    const env = { SMTP_URL: sink.url, SMTP_LOOKUP_URL: lookupUrl };
    const doomed = worker(env);
    const { batchId, jobIds } = await ns.client.enqueueBatch({
      tasks: [{ task: 'mail dee', tools: ['send_email'] }],
    });
    const jobId = jobIds[0]!;
    await until(() => delivered(sink, 'dee@example.com').length === 1, 'the message at the sink');
    doomed.child.kill('SIGKILL');
    await doomed.exited;

    const rescuer = worker(env);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 45_000 });
    expect(result).toMatchObject({
      status: 'failed',
      stopReason: 'error',
      error: { code: 'uncertain_effects' },
    });
    expect(result.uncertainEffects).toEqual([
      expect.objectContaining({
        tool: 'send_email',
        what: expect.stringMatching(/^email to dee@example\.com \(message-id <.+>\)$/),
        why: expect.stringMatching(/delivery lookup failed/),
      }),
    ]);
    expect(await ledgerOf(jobId)).toMatchObject([{ status: 'uncertain' }]);
    expect(delivered(sink, 'dee@example.com')).toHaveLength(1);

    await ns.client.waitForBatch(batchId, { timeoutMs: 30_000 });
    const pool = await createStorePool(ns.mysqlUrl);
    try {
      const loaded = await new BatchReportStore(pool).loadBatch(batchId);
      const report = buildBatchReport(loaded!.batch, loaded!.runs, { emails: loaded!.emails });
      expect(report.emails).toEqual([
        expect.objectContaining({ index: 1, jobId, recipient: 'dee@example.com', state: 'uncertain' }),
      ]);
      // The report the batch stored when it completed lists it too.
      await until(
        async () =>
          (await queryStore(ns, 'SELECT 1 FROM batch_reports WHERE batch_id = ?', [batchId])).length > 0,
        'the stored report',
      );
      const [stored] = await queryStore<{ markdown: string }>(
        ns,
        'SELECT markdown FROM batch_reports WHERE batch_id = ?',
        [batchId],
      );
      expect(stored?.markdown).toMatch(/## Emails not known to be delivered/);
      expect(stored?.markdown).toContain('dee@example.com');

      // Once a lookup can answer, a worker's sweeper settles the row at start, and the report follows.
      await killWorker(rescuer);
      const settler = worker({
        SMTP_URL: sink.url,
        SMTP_LOOKUP_URL: sink.lookupUrl,
        EMAIL_PENDING_GRACE_MS: '500',
      });
      await until(async () => (await ledgerOf(jobId))[0]?.status === 'done', 'the sweeper to settle the row');
      // The row is updated before the line is logged: wait for the line.
      await settler.waitForOutput(/email sweep: delivered, recorded as sent/);
      const later = await new BatchReportStore(pool).loadBatch(batchId);
      expect(later!.emails).toEqual([]);
      expect(delivered(sink, 'dee@example.com')).toHaveLength(1);
      await killWorker(settler);
    } finally {
      await pool.end();
    }
  }, 120_000);
});
