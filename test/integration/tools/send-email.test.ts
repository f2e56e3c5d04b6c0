// send_email end to end: through runToolCall, against a real MariaDB/MySQL ledger (a database of its own,
// af_test_email_<random>, dropped at the end) and a real SMTP sink. With no database server every test fails,
// none is skipped.
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../../src/kernel/run-agent.js';
import type { AgentResult, RunState } from '../../../src/kernel/types.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { EffectLedger } from '../../../src/effects/effect-ledger.js';
import { sweepUnsettledEffects, sweptToolsOf } from '../../../src/effects/effect-sweeper.js';
import { SentEmails } from '../../../src/tools/sent-emails.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { runToolCall, type ToolCallOutcome, type ToolRunOptions } from '../../../src/kernel/run-tool-call.js';
import type { DeliveryLookup } from '../../../src/tools/delivery-lookup.js';
import {
  createSendEmailTool,
  deriveMessageId,
  type SendEmailToolOptions,
} from '../../../src/tools/send-email.js';
import { SmtpPool } from '../../../src/tools/smtp-pool.js';
import { createSmtpTransport, type SmtpTransport } from '../../../src/tools/smtp-transport.js';
import { startScriptedModel, type ScriptedReply } from '../../../src/testing/scripted-model-server.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const DATABASE = `af_test_email_${randomBytes(4).toString('hex')}`;
const FROM = 'reports@agent-fleet.local';
const ALLOWED = ['example.com'];
const RUN_OPTIONS: ToolRunOptions = { defaultTimeoutMs: 15_000, transientRetries: 2, retryBaseDelayMs: 5 };

function databaseUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.href;
}

let pool: Pool;
let ledger: EffectLedger;
let sink: SmtpSink;
let transport: SmtpTransport;
let setupError: unknown;
const transports: SmtpTransport[] = [];

beforeAll(async () => {
  try {
    pool = await createStorePool(databaseUrl(DATABASE), { connectTimeout: 5000 });
    await migrate(pool);
    ledger = new EffectLedger(pool);
    sink = await startSmtpSink();
    transport = track(createSmtpTransport(sink.url));
  } catch (error) {
    setupError = error;
  }
});

// A failed beforeAll only marks the tests skipped; rethrowing per test makes a missing server a failure.
beforeEach(() => {
  if (setupError !== undefined) throw setupError;
});

afterAll(async () => {
  for (const t of transports) t.close();
  await sink?.close();
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

function track(t: SmtpTransport): SmtpTransport {
  transports.push(t);
  return t;
}

/** A fresh job id per test, so the tests share the database without seeing each other's rows. */
function newJob(): string {
  return `job-${randomBytes(4).toString('hex')}`;
}

function tool(overrides: Partial<SendEmailToolOptions> = {}) {
  return createSendEmailTool({
    ledger,
    transport,
    from: FROM,
    allowedDomains: ALLOWED,
    maxPerRun: 10,
    ...overrides,
  });
}

async function call(
  sendEmail: ReturnType<typeof tool>,
  callKey: string,
  args: Record<string, unknown>,
): Promise<ToolCallOutcome> {
  const registry = new ToolRegistry([sendEmail]);
  const jobId = callKey.split(':')[0] ?? callKey;
  return runToolCall(
    registry,
    { name: 'send_email', args: { ok: true, value: args } },
    { signal: new AbortController().signal, runId: jobId, callKey, step: 1 },
    RUN_OPTIONS,
  );
}

const received = (messageId: string, from: SmtpSink = sink) =>
  from.messages.filter((message) => message.messageId === messageId);

async function ledgerRows(jobId: string): Promise<RowDataPacket[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT * FROM effect_ledger WHERE job_id = ? AND tool = 'send_email' ORDER BY effect_key",
    [jobId],
  );
  return rows;
}

/** The detail column of a send_email row: its recipient and subject. */
const DETAIL = "JSON_OBJECT('recipient', 'ada@example.com', 'subject', 'Thank you')";

const email = { to: 'ada@example.com', subject: 'Thank you', body: 'Dear Ada,\n\nThanks for your orders.\n' };

describe('send_email', () => {
  it('sends one email with exactly the checked envelope and a Message-ID derived from the call key', async () => {
    const job = newJob();
    const callKey = `${job}:1:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    const outcome = await call(tool(), callKey, email);

    expect(outcome).toMatchObject({ ok: true, attempts: 1 });
    expect(outcome.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
    expect(messageId).toMatch(/^<[0-9a-f]{32}@agent-fleet\.local>$/);
    const [message, ...others] = received(messageId);
    expect(others).toEqual([]);
    expect(message).toMatchObject({
      from: FROM,
      to: ['ada@example.com'],
      subject: 'Thank you',
      messageId,
    });
    expect(message?.text.trim()).toBe(email.body.trim());
    expect(message?.raw).not.toMatch(/^(Cc|Bcc):/im);

    const [row] = await ledgerRows(job);
    // send_email's row in the effect ledger: done, its Message-ID as the ref, the server's reply as the result.
    expect(row).toMatchObject({ effect_key: callKey, tool: 'send_email', status: 'done', ref: messageId });
    expect(JSON.parse(String(row?.['detail']))).toEqual({
      recipient: 'ada@example.com',
      subject: 'Thank you',
    });
    expect(JSON.parse(String(row?.['result'])).smtpResponse).toMatch(/^250/);
  });

  it('sends once when the same call runs twice, and the second run reports what the first did', async () => {
    const job = newJob();
    const callKey = `${job}:2:0`;
    const first = await call(tool(), callKey, email);
    const second = await call(tool(), callKey, email);
    // A resumed job whose model now proposes something else at the same call position: still nothing sent.
    const changed = await call(tool(), callKey, { ...email, to: 'bob@example.com' });

    expect(first.output).toMatch(/^Sent to/);
    expect(second).toMatchObject({ ok: true });
    // A resumed run sees what the uninterrupted run saw: its prompts (and budget decisions) stay the same.
    expect(second.output).toBe(first.output);
    expect(changed.output).toBe(
      `${first.output} This attempt asked for a different email (to bob@example.com); it was not sent: one email per call.`,
    );
    expect(received(deriveMessageId(callKey, 'agent-fleet.local'))).toHaveLength(1);
    expect(sink.messages.filter((m) => m.to.includes('bob@example.com'))).toEqual([]);
    expect((await ledgerRows(job)).map((row) => row['status'])).toEqual(['done']);
  });

  it('does not send again when an earlier attempt stopped mid-send and nothing can tell, and says so', async () => {
    const job = newJob();
    const callKey = `${job}:3:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    // Claimed and handed off to SMTP five minutes ago, never recorded: the worker died mid-send.
    await pool.query(
      `INSERT INTO effect_ledger (effect_key, job_id, tool, detail, ref, status, started_at, updated_at)
       VALUES (?, ?, 'send_email', ${DETAIL}, ?, 'pending', NOW(3) - INTERVAL 5 MINUTE, NOW(3) - INTERVAL 5 MINUTE)`,
      [callKey, job, messageId],
    );

    const outcome = await call(tool(), callKey, email);

    expect(outcome.output).toMatch(/uncertain/i);
    expect(outcome.output).toContain(messageId);
    expect(outcome.output).toMatch(/not sent again/);
    // The run's result will list it.
    expect(outcome.uncertain).toEqual({
      tool: 'send_email',
      callKey,
      what: `email to ada@example.com (message-id ${messageId})`,
      why: 'no delivery lookup is configured (SMTP_LOOKUP_URL)',
    });
    expect(received(messageId)).toEqual([]);
    const [row] = await ledgerRows(job);
    expect(row).toMatchObject({
      status: 'uncertain',
      error: 'no delivery lookup is configured (SMTP_LOOKUP_URL)',
    });
  });

  it('gives its row back when cancelled between the claim and SMTP, so the resumed call sends it', async () => {
    const job = newJob();
    const callKey = `${job}:3:2`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    const controller = new AbortController();
    // The run is cancelled (a shutdown) the moment the claim is made.
    const cancelling = new Proxy(ledger, {
      get(target, property) {
        if (property === 'claim') {
          return async (claim: Parameters<EffectLedger['claim']>[0]) => {
            const result = await target.claim(claim);
            controller.abort('worker-shutdown');
            return result;
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const execute = tool({ ledger: cancelling }).execute(email, {
      signal: controller.signal,
      runId: job,
      callKey,
      step: 3,
      once: (effect) => effect(),
    });
    await expect(execute).rejects.toThrow(/cancelled; nothing was sent/);
    expect(await ledgerRows(job)).toMatchObject([
      { status: 'failed', error: 'not delivered: cancelled before sending' },
    ]);

    expect((await call(tool(), callKey, email)).output).toBe(
      `Sent to ada@example.com (message-id ${messageId}).`,
    );
    expect(received(messageId)).toHaveLength(1);
  });

  it('sends, once, when an earlier attempt stopped after its claim but before reaching SMTP', async () => {
    const job = newJob();
    const callKey = `${job}:3:1`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    // Claimed, never handed off: the claim itself proves nothing went out, no lookup needed.
    await pool.query(
      `INSERT INTO effect_ledger (effect_key, job_id, tool, detail, ref, status, updated_at)
       VALUES (?, ?, 'send_email', ${DETAIL}, ?, 'pending', NOW(3) - INTERVAL 5 MINUTE)`,
      [callKey, job, messageId],
    );

    const outcome = await call(tool(), callKey, email);

    expect(outcome.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
    expect(outcome.uncertain).toBeUndefined();
    expect(received(messageId)).toHaveLength(1);
    expect(await ledgerRows(job)).toMatchObject([{ status: 'done', attempt: 2 }]);
  });

  describe('a pending row settled by the delivery lookup', () => {
    /** A row claimed and handed off to SMTP `ageSeconds` ago, never recorded: its worker died mid-send. */
    async function crashedMidSend(
      job: string,
      callKey: string,
      messageId: string,
      ageSeconds = 300,
    ): Promise<void> {
      await pool.query(
        `INSERT INTO effect_ledger (effect_key, job_id, tool, detail, ref, status, started_at,
           created_at, updated_at)
         VALUES (?, ?, 'send_email', ${DETAIL}, ?, 'pending', NOW(3) - INTERVAL ? SECOND,
           NOW(3) - INTERVAL ? SECOND, NOW(3) - INTERVAL ? SECOND)`,
        [callKey, job, messageId, ageSeconds, ageSeconds, ageSeconds],
      );
    }
    const lookupOf = (target: SmtpSink) => ({
      delivered: async (id: string) => target.messages.some((m) => m.messageId === id),
    });

    it('records a message that did arrive as sent, and does not send it again', async () => {
      const job = newJob();
      const callKey = `${job}:4:1`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      // The crashed attempt got its message out before dying.
      await transport.sendMail({
        from: FROM,
        to: 'ada@example.com',
        subject: 'Thank you',
        text: 'x',
        messageId,
      });
      await crashedMidSend(job, callKey, messageId);
      const outcome = await call(
        tool({ deliveryLookup: lookupOf(sink), pendingGraceMs: 1_000 }),
        callKey,
        email,
      );
      expect(outcome.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
      expect(received(messageId)).toHaveLength(1);
      expect((await ledgerRows(job)).map((row) => row['status'])).toEqual(['done']);
    });

    it('sends a message that never arrived, once', async () => {
      const job = newJob();
      const callKey = `${job}:4:2`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      await crashedMidSend(job, callKey, messageId);
      const sendEmail = tool({ deliveryLookup: lookupOf(sink), pendingGraceMs: 1_000 });
      expect((await call(sendEmail, callKey, email)).output).toBe(
        `Sent to ada@example.com (message-id ${messageId}).`,
      );
      expect((await call(sendEmail, callKey, email)).output).toBe(
        `Sent to ada@example.com (message-id ${messageId}).`,
      );
      expect(received(messageId)).toHaveLength(1);
    });

    it('waits while a young pending row may be another attempt still sending, and takes its outcome', async () => {
      const job = newJob();
      const callKey = `${job}:4:3`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      await crashedMidSend(job, callKey, messageId, 0);
      let lookups = 0;
      const sendEmail = tool({
        deliveryLookup: { delivered: async () => (lookups++, false) },
        pendingGraceMs: 30_000,
        pendingPollMs: 100,
      });
      // The other attempt records its send 600 ms later.
      const otherAttempt = new Promise<void>((resolve) =>
        setTimeout(
          () =>
            void ledger.markDone(callKey, { smtpResponse: '250 OK from the other attempt' }).then(resolve),
          600,
        ),
      );
      const started = Date.now();
      const outcome = await call(sendEmail, callKey, email);
      await otherAttempt;
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
      expect(outcome.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
      expect(lookups).toBe(0);
      expect(received(messageId)).toEqual([]);
    });

    it('waits out the grace, then asks the lookup, and sends a message that never arrived', async () => {
      const job = newJob();
      const callKey = `${job}:4:5`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      await crashedMidSend(job, callKey, messageId, 0);
      const started = Date.now();
      const outcome = await call(
        tool({ deliveryLookup: lookupOf(sink), pendingGraceMs: 1_500, pendingPollMs: 200 }),
        callKey,
        email,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_300);
      expect(outcome.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
      expect(received(messageId)).toHaveLength(1);
    });

    it('says delivery is uncertain when the lookup fails, and records the row as uncertain', async () => {
      const job = newJob();
      const callKey = `${job}:4:6`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      await crashedMidSend(job, callKey, messageId);
      const down = {
        delivered: async (): Promise<boolean> => {
          throw new Error('the delivery lookup answered 503');
        },
      };
      const outcome = await call(tool({ deliveryLookup: down, pendingGraceMs: 1_000 }), callKey, email);
      expect(outcome).toMatchObject({ ok: true });
      expect(outcome.output).toMatch(/^Delivery uncertain/);
      expect(outcome.uncertain?.why).toMatch(/delivery lookup failed .*503/);
      expect(received(messageId)).toEqual([]);
      expect(await ledgerRows(job)).toMatchObject([{ status: 'uncertain' }]);
      // Once the lookup answers again, the next attempt of the call settles it.
      const back = await call(
        tool({ deliveryLookup: lookupOf(sink), pendingGraceMs: 1_000 }),
        callKey,
        email,
      );
      expect(back.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
      expect(received(messageId)).toHaveLength(1);
    });

    it('an attempt whose claim was taken over cannot hand off its send', async () => {
      const job = newJob();
      const callKey = `${job}:4:7`;
      const claim = {
        effectKey: callKey,
        jobId: job,
        tool: 'send_email',
        detail: { recipient: 'ada@example.com', subject: 'Thank you' },
        ref: deriveMessageId(callKey, 'agent-fleet.local'),
      };
      expect(await ledger.claim(claim)).toEqual({ kind: 'new', attempt: 1 });
      // Another attempt found the row stale and took it over.
      expect(await ledger.release(callKey, 1, 'not delivered: taken over')).toBe(true);
      expect(await ledger.claim(claim)).toEqual({ kind: 'new', attempt: 2 });
      expect(await ledger.markStarted(callKey, 1)).toBe(false);
      expect(await ledger.markStarted(callKey, 2)).toBe(true);
    });

    it('the demo sink answers lookups over HTTP', async () => {
      const { httpDeliveryLookup } = await import('../../../src/tools/delivery-lookup.js');
      const lookup = httpDeliveryLookup(sink.lookupUrl);
      const job = newJob();
      const callKey = `${job}:4:4`;
      await call(tool(), callKey, email);
      expect(await lookup.delivered(deriveMessageId(callKey, 'agent-fleet.local'))).toBe(true);
      expect(await lookup.delivered('<nobody@agent-fleet.local>')).toBe(false);
    });
  });

  it('refuses the call past EMAIL_MAX_PER_RUN and sends nothing for it', async () => {
    const job = newJob();
    const capped = tool({ maxPerRun: 2 });
    const outcomes = [];
    for (let step = 1; step <= 3; step++) {
      outcomes.push(await call(capped, `${job}:${step}:0`, { ...email, subject: `Note ${step}` }));
    }

    expect(outcomes.map((o) => o.ok)).toEqual([true, true, false]);
    expect(outcomes[2]).toMatchObject({ errorCode: 'email_cap_reached' });
    expect(outcomes[2]?.output).toMatch(/^Error: .*EMAIL_MAX_PER_RUN=2.*nothing was sent/);
    expect(received(deriveMessageId(`${job}:3:0`, 'agent-fleet.local'))).toEqual([]);
    expect(await ledgerRows(job)).toHaveLength(2);
    // A replay of a call that did send is reported as sent, not refused by the cap.
    expect((await call(capped, `${job}:2:0`, { ...email, subject: 'Note 2' })).output).toBe(
      outcomes[1]?.output,
    );
  });

  it('holds the cap when one step asks for several emails at once', async () => {
    const job = newJob();
    const capped = tool({ maxPerRun: 2 });
    const outcomes = await Promise.all(
      [0, 1, 2, 3, 4].map((n) => call(capped, `${job}:1:${n}`, { ...email, subject: `Parallel ${n}` })),
    );

    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
    expect(outcomes.filter((o) => o.errorCode === 'email_cap_reached')).toHaveLength(3);
    const ids = [0, 1, 2, 3, 4].map((n) => deriveMessageId(`${job}:1:${n}`, 'agent-fleet.local'));
    expect(ids.flatMap((id) => received(id))).toHaveLength(2);
    expect((await ledgerRows(job)).map((row) => row['status'])).toEqual(['done', 'done']);
  });

  it('refuses header injection in the subject, before anything is recorded or sent', async () => {
    const job = newJob();
    const before = sink.messages.length;
    for (const subject of [
      'Hi\r\nBcc: x@evil.com',
      'Hi\nBcc: x@evil.com',
      'Hi\u0000',
      'Hi\u2028Bcc: x@evil.com',
    ]) {
      const outcome = await call(tool(), `${job}:1:0`, { ...email, subject });
      expect(outcome).toMatchObject({ ok: false, errorCode: 'email_subject_refused', attempts: 1 });
    }
    const long = await call(tool({ maxSubjectChars: 10 }), `${job}:1:0`, {
      ...email,
      subject: 'x'.repeat(11),
    });
    expect(long.output).toMatch(/at most 10/);
    expect(sink.messages.length).toBe(before);
    expect(await ledgerRows(job)).toEqual([]);
  });

  it('refuses a recipient outside the allowed domains and sends nothing', async () => {
    const job = newJob();
    const before = sink.messages.length;
    for (const to of [
      'x@evil.com',
      '"Boss" <ada@example.com>',
      'ada@example.com, x@evil.com',
      'a@mail.example.com',
    ]) {
      const outcome = await call(tool(), `${job}:1:0`, { ...email, to });
      expect(outcome).toMatchObject({ ok: false, errorCode: 'email_recipient_refused' });
      expect(outcome.output).toContain('example.com');
    }
    // No other fields: cc, bcc or headers from the model are not even parsed.
    const extra = await call(tool(), `${job}:1:0`, { ...email, bcc: 'x@evil.com' });
    expect(extra).toMatchObject({ ok: false, errorCode: 'invalid_arguments' });
    expect(sink.messages.length).toBe(before);
    expect(await ledgerRows(job)).toEqual([]);
  });

  it('records a dry run without sending, once', async () => {
    const job = newJob();
    const callKey = `${job}:1:0`;
    const before = sink.messages.length;
    const dry = tool({ dryRun: true });
    const first = await call(dry, callKey, email);
    const second = await call(dry, callKey, email);

    expect(first.output).toMatch(/^Dry run: email to ada@example\.com recorded but not sent/);
    expect(second.output).toBe(first.output);
    expect(sink.messages.length).toBe(before);
    expect(await ledgerRows(job)).toMatchObject([{ status: 'done', result: '{"dryRun":true}' }]);
  });

  it('reports an unreachable SMTP server after the retries, marks the row failed, and sends once when it is back', async () => {
    const job = newJob();
    const callKey = `${job}:1:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    // A port that was just free: nothing listens there until the sink comes back on it.
    const probe = await startSmtpSink();
    const port = probe.port;
    await probe.close();
    const down = tool({ transport: track(createSmtpTransport(`smtp://127.0.0.1:${port}`)) });

    const failed = await call(down, callKey, email);
    expect(failed).toMatchObject({ ok: false, errorCode: 'email_smtp_unavailable', attempts: 3 });
    expect(failed.output).toMatch(/^Error \(after 3 attempts\): the SMTP server could not be reached/);
    expect(failed.output).toMatch(/was not sent$/);
    const [row] = await ledgerRows(job);
    expect(row).toMatchObject({ status: 'failed' });
    expect(String(row?.['error'])).toMatch(/ECONNREFUSED/);

    const back = await startSmtpSink({ port });
    try {
      const retried = await call(down, callKey, email);
      const again = await call(down, callKey, email);
      expect(retried.output).toBe(`Sent to ada@example.com (message-id ${messageId}).`);
      expect(again.output).toBe(retried.output);
      expect(received(messageId, back)).toHaveLength(1);
      expect((await ledgerRows(job)).map((r) => r['status'])).toEqual(['done']);
    } finally {
      await back.close();
    }
  });

  it('does not retry when the connection drops after the message was transmitted: delivery is uncertain', async () => {
    const job = newJob();
    const callKey = `${job}:1:0`;
    const server = await startDroppingServer();
    try {
      const dropping = tool({
        transport: track(createSmtpTransport(`smtp://127.0.0.1:${server.port}`)),
        pendingGraceMs: 300,
      });
      const outcome = await call(dropping, callKey, email);
      expect(outcome).toMatchObject({ ok: true, attempts: 1 });
      expect(outcome.output).toMatch(/^Delivery uncertain: .*Do not send it again\.$/);
      expect(outcome.uncertain?.why).toMatch(/mid-send/);
      expect(server.messagesTransmitted()).toBe(1);
      const [row] = await ledgerRows(job);
      expect(row).toMatchObject({ status: 'pending' });
      expect(String(row?.['error'])).toMatch(/mid-send/);

      // The job is retried: still not sent again, and with no lookup to ask the row ends uncertain.
      const retried = await call(dropping, callKey, email);
      expect(retried.output).toMatch(/uncertain/i);
      expect(server.messagesTransmitted()).toBe(1);
      expect(await ledgerRows(job)).toMatchObject([{ status: 'uncertain' }]);
    } finally {
      await server.close();
    }
  });
});

describe('send_email on pooled SMTP connections', () => {
  const silent = { info: () => undefined, warn: () => undefined };

  it('never marks a message handed off while it waits for a connection: a wait past the grace, a takeover and a sweep still send it once', async () => {
    // One connection, held by a first email whose final reply the sink stalls well past the grace.
    let stall: (() => void) | undefined;
    const stalled = new Promise<void>((resolve) => (stall = resolve));
    let holds = 0;
    const slowSink = await startSmtpSink({
      holdReply: (stage) => (stage === 'data' && holds++ === 0 ? stalled : undefined),
    });
    const smtp = new SmtpPool(slowSink.url, { maxConnections: 1 });
    try {
      const graceMs = 300;
      const lookup = { delivered: async (id: string) => slowSink.messages.some((m) => m.messageId === id) };
      const sendEmail = tool({
        transport: smtp,
        deliveryLookup: lookup,
        pendingGraceMs: graceMs,
        pendingPollMs: 50,
      });
      const job = newJob();
      const first = call(sendEmail, `${job}:1:0`, { ...email, subject: 'first' });
      await until(() => holds === 1);
      const queuedKey = `${job}:1:1`;
      const queuedId = deriveMessageId(queuedKey, 'agent-fleet.local');
      const queued = call(sendEmail, queuedKey, email);
      await sleep(graceMs * 3);
      // Nothing is recorded for the queued message: no row a takeover or a sweep could find "not delivered".
      expect((await ledgerRows(job)).map((row) => row['effect_key'])).toEqual([`${job}:1:0`]);
      const swept = await sweepUnsettledEffects({
        ledger: new EffectLedger(pool),
        tools: sweptToolsOf([sendEmail]),
        logger: silent,
      });
      expect(swept).toBeDefined();
      // Another attempt of the same call (a resumed run) meanwhile.
      const takeover = call(sendEmail, queuedKey, email);
      await sleep(graceMs * 2);
      stall?.();
      const outcomes = await Promise.all([first, queued, takeover]);
      expect(outcomes.map((o) => o.ok)).toEqual([true, true, true]);
      expect(slowSink.messages.filter((m) => m.messageId === queuedId)).toHaveLength(1);
      expect(outcomes[1]?.output).toBe(`Sent to ada@example.com (message-id ${queuedId}).`);
      expect(outcomes[2]?.output).toBe(`Sent to ada@example.com (message-id ${queuedId}).`);
      const rows = await ledgerRows(job);
      expect(rows.map((row) => [row['status'], row['attempt']])).toEqual([
        ['done', 1],
        ['done', 1],
      ]);
    } finally {
      smtp.close();
      stall?.();
      await slowSink.close();
    }
  });

  it('claims the row handed off in the same write, and records nothing for a call cancelled while queued', async () => {
    const smtp = new SmtpPool(sink.url, { maxConnections: 1 });
    try {
      const sendEmail = tool({ transport: smtp });
      const job = newJob();
      const held = await smtp.acquire(new AbortController().signal);
      const controller = new AbortController();
      const registry = new ToolRegistry([sendEmail]);
      const cancelled = runToolCall(
        registry,
        { name: 'send_email', args: { ok: true, value: email } },
        { signal: controller.signal, runId: job, callKey: `${job}:2:0`, step: 2 },
        RUN_OPTIONS,
      );
      await sleep(100);
      controller.abort();
      await cancelled;
      held.release();
      expect(await ledgerRows(job)).toEqual([]);

      const callKey = `${job}:2:1`;
      const outcome = await call(sendEmail, callKey, email);
      expect(outcome.output).toBe(
        `Sent to ada@example.com (message-id ${deriveMessageId(callKey, 'agent-fleet.local')}).`,
      );
      const [row] = await ledgerRows(job);
      expect(row).toMatchObject({ status: 'done', attempt: 1 });
      expect(row?.['started_at']).toBeInstanceOf(Date);
    } finally {
      smtp.close();
    }
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await sleep(10);
  }
}

describe('the sweeper of unsettled emails', () => {
  const silent = { info: () => undefined, warn: () => undefined };

  /** The worker's effect sweeper, over send_email's rows, with the hooks the tool declares. */
  function sweepUnsettledEmails(options: {
    graceMs: number;
    lookup?: DeliveryLookup;
    onSettled?: (outcome: string) => void;
    batchSize?: number;
  }) {
    const sendEmail = tool({
      pendingGraceMs: options.graceMs,
      ...(options.lookup ? { deliveryLookup: options.lookup } : {}),
      ...(options.onSettled ? { onSettled: options.onSettled } : {}),
    });
    return sweepUnsettledEffects({
      ledger: new EffectLedger(pool),
      tools: sweptToolsOf([sendEmail]),
      logger: silent,
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
    });
  }

  async function row(job: string, n: number, opts: { handedOff: boolean; ageSeconds: number }) {
    const callKey = `${job}:9:${n}`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    await pool.query(
      `INSERT INTO effect_ledger (effect_key, job_id, tool, detail, ref, status, started_at, updated_at)
       VALUES (?, ?, 'send_email', ${DETAIL}, ?, 'pending', IF(?, NOW(3), NULL), NOW(3) - INTERVAL ? SECOND)`,
      [callKey, job, messageId, opts.handedOff, opts.ageSeconds],
    );
    return { callKey, messageId };
  }

  it('settles the rows of attempts that stopped for good, leaves young ones, and surfaces the rest', async () => {
    const job = newJob();
    const neverSent = await row(job, 1, { handedOff: false, ageSeconds: 600 });
    const arrived = await row(job, 2, { handedOff: true, ageSeconds: 600 });
    const lost = await row(job, 3, { handedOff: true, ageSeconds: 600 });
    const young = await row(job, 4, { handedOff: true, ageSeconds: 0 });
    const unknowable = await row(job, 5, { handedOff: true, ageSeconds: 600 });
    const outcomes: string[] = [];
    let lookupUp = false;
    const lookup = {
      delivered: async (id: string) => {
        if (id === unknowable.messageId && !lookupUp) throw new Error('lookup down');
        return id === arrived.messageId || id === unknowable.messageId;
      },
    };
    const options = { lookup, graceMs: 60_000, onSettled: (o: string) => outcomes.push(o) };

    await sweepUnsettledEmails(options);

    const status = async () =>
      Object.fromEntries(
        (await ledgerRows(job)).map((r) => [String(r['effect_key']), [r['status'], r['error']]]),
      );
    const after = await status();
    expect(after[neverSent.callKey]).toEqual([
      'failed',
      expect.stringMatching(/^not done: .*before starting/),
    ]);
    expect(after[arrived.callKey]?.[0]).toBe('done');
    expect(after[lost.callKey]).toEqual(['failed', expect.stringMatching(/^not done/)]);
    expect(after[young.callKey]?.[0]).toBe('pending');
    expect(after[unknowable.callKey]).toEqual([
      'uncertain',
      expect.stringMatching(/lookup failed \(lookup down\)/),
    ]);
    expect(outcomes.sort()).toEqual(['not_delivered', 'not_delivered', 'sent', 'uncertain']);

    // The report's view of the job: what is not known to have arrived.
    const doubtful = await new SentEmails(pool).listDoubtful([job]);
    expect(doubtful.map((d) => [d.callKey, d.status])).toEqual([
      [neverSent.callKey, 'failed'],
      [lost.callKey, 'failed'],
      [young.callKey, 'pending'],
      [unknowable.callKey, 'uncertain'],
    ]);

    // An uncertain row is looked at again on every sweep while a lookup is configured.
    lookupUp = true;
    await pool.query(
      'UPDATE effect_ledger SET updated_at = NOW(3) - INTERVAL 10 MINUTE WHERE effect_key = ?',
      [unknowable.callKey],
    );
    await sweepUnsettledEmails(options);
    expect((await status())[unknowable.callKey]?.[0]).toBe('done');
  });

  it('settles pending rows first: old uncertain rows it cannot settle never crowd them out', async () => {
    const down = {
      delivered: async (): Promise<boolean> => {
        throw new Error('lookup down');
      },
    };
    for (const lookup of [undefined, down]) {
      const job = newJob();
      const stuck = await row(job, 1, { handedOff: true, ageSeconds: 900 });
      await pool.query(
        "UPDATE effect_ledger SET status = 'uncertain', updated_at = NOW(3) - INTERVAL 15 MINUTE WHERE effect_key = ?",
        [stuck.callKey],
      );
      const neverSent = await row(job, 2, { handedOff: false, ageSeconds: 600 });
      await sweepUnsettledEmails({ graceMs: 60_000, batchSize: 1, ...(lookup ? { lookup } : {}) });
      const statuses = Object.fromEntries(
        (await ledgerRows(job)).map((r) => [String(r['effect_key']), r['status']]),
      );
      expect(statuses).toEqual({ [stuck.callKey]: 'uncertain', [neverSent.callKey]: 'failed' });
    }
  });

  it('without a lookup, marks a stopped send uncertain and leaves it so', async () => {
    const job = newJob();
    const stopped = await row(job, 1, { handedOff: true, ageSeconds: 600 });
    const first = await sweepUnsettledEmails({ graceMs: 60_000 });
    const second = await sweepUnsettledEmails({ graceMs: 60_000 });
    expect(first.uncertain).toBeGreaterThanOrEqual(1);
    expect(second.uncertain).toBe(0);
    expect(await ledgerRows(job)).toMatchObject([{ effect_key: stopped.callKey, status: 'uncertain' }]);
  });
});

/**
 * An SMTP server that takes the whole message and then hangs up instead of answering the final dot: the
 * client cannot know whether the message was accepted.
 */
async function startDroppingServer(): Promise<{
  port: number;
  messagesTransmitted(): number;
  close(): Promise<void>;
}> {
  let transmitted = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let inData = false;
    let buffer = '';
    socket.write('220 dropper ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end === -1) return;
          transmitted++;
          socket.destroy();
          return;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol === -1) return;
        const line = buffer.slice(0, eol).toUpperCase();
        buffer = buffer.slice(eol + 2);
        if (line.startsWith('EHLO')) socket.write('250-dropper\r\n250 8BITMIME\r\n');
        else if (line.startsWith('DATA')) {
          inData = true;
          buffer = `\r\n${buffer}`;
          socket.write('354 go ahead\r\n');
        } else socket.write('250 OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    messagesTransmitted: () => transmitted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('send_email in a resumed run', () => {
  // Regression: a run resumed from its write-ahead checkpoint after its emails went out (a worker killed right
  // after sending) was told "Already sent … by an earlier attempt of this call; not sent again." for each one:
  // 13 tokens more per email in every later prompt, enough to tip the reference task's $0.05 budget into a
  // forced final turn. The resumed run must see, pay and decide exactly what the uninterrupted one did.
  it('sends the model the same prompts and ends with the same result as the uninterrupted run', async () => {
    const recipients = ['ada@example.com', 'bob@example.com', 'cy@example.com'];
    const script: ScriptedReply[] = [
      {
        actions: recipients.map((to) => ({
          tool: 'send_email',
          args: { to, subject: 'Thank you', body: 'Dear customer,\n\nThanks for your orders.\n' },
        })),
      },
      { answer: 'Each of the three was emailed.' },
    ];
    const model = await startScriptedModel({ script });
    try {
      const runId = newJob();
      const run = async (checkpoint?: RunState) => {
        const checkpoints: RunState[] = [];
        const result: AgentResult = await runAgent({
          runId,
          task: 'Email each of the three customers a thank-you note.',
          model: new OpenAIChatModel({ model: 'gpt-4-turbo', apiKey: 'test', baseURL: model.baseURL }),
          price: priceOf('gpt-4-turbo'),
          tools: new ToolRegistry([tool()]),
          budget: { maxSteps: 4, maxTokens: 10_000, maxCostUsd: 0.05, deadlineMs: 30_000 },
          ...(checkpoint ? { checkpoint } : {}),
          onCheckpoint: (c) => void checkpoints.push(c.state),
        });
        return { result, checkpoints };
      };

      const original = await run();
      const asked = model.requests.map((r) => r.messages);
      expect(original.result).toMatchObject({ status: 'succeeded', steps: 2, toolCalls: 3 });
      // The write-ahead checkpoint: the model's decision saved, none of its calls run yet.
      const writeAhead = original.checkpoints.find((c) => c.pending?.results.every((r) => r === null));
      expect(writeAhead).toBeDefined();

      model.reset({ script: script.slice(writeAhead!.modelCalls) });
      const before = model.requests.length;
      const resumed = await run(writeAhead);

      expect(resumed.result).toEqual(original.result);
      expect(model.requests.slice(before).map((r) => r.messages)).toEqual(
        asked.slice(writeAhead!.modelCalls),
      );
      // One email per call, whichever run made it (the kernel's call keys: run, step, position).
      for (const i of [1, 2, 3])
        expect(received(deriveMessageId(`${runId}:1:${i}`, 'agent-fleet.local'))).toHaveLength(1);
    } finally {
      await model.close();
    }
  });
});
