// Red-team cases of send_email's at-most-once path (docs/side-effects.md) against a real MariaDB ledger and the
// SMTP sink: a connection that breaks mid-send with a socket error that usually means "never connected", a
// late failure of a taken-over attempt, and the claims of one reply when the job's lock is busy.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { effectsInFlight } from '../../../src/kernel/effects-in-flight.js';
import { runToolCall, type ToolRunOptions } from '../../../src/kernel/run-tool-call.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { EffectLedger } from '../../../src/effects/effect-ledger.js';
import {
  createSendEmailTool,
  deriveMessageId,
  type SendEmailToolOptions,
} from '../../../src/tools/send-email.js';
import { SmtpPool } from '../../../src/tools/smtp-pool.js';

const database = `af_test_email_rt_${randomBytes(4).toString('hex')}`;
const url = `mysql://root@127.0.0.1:3306/${database}`;
const RUN_OPTIONS: ToolRunOptions = { defaultTimeoutMs: 15_000, transientRetries: 2, retryBaseDelayMs: 5 };
const email = { to: 'ada@example.com', subject: 'Thank you', body: 'Dear Ada,\n\nThanks.\n' };

let pool: Pool;

beforeAll(async () => {
  pool = await createStorePool(url);
  await migrate(pool);
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`);
  await pool.end();
});

const newJob = () => `job-${randomBytes(4).toString('hex')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

async function rowOf(effectKey: string): Promise<RowDataPacket | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT * FROM effect_ledger WHERE effect_key = ?', [
    effectKey,
  ]);
  return rows[0];
}

/** The row of a call whose attempt 1 handed its email off five minutes ago and stopped there. */
async function handedOffLongAgo(callKey: string, job: string, messageId: string): Promise<void> {
  await pool.query(
    `INSERT INTO effect_ledger (effect_key, job_id, tool, detail, ref, status, started_at, updated_at)
     VALUES (?, ?, 'send_email', JSON_OBJECT('recipient', 'ada@example.com', 'subject', 'Thank you'), ?,
       'pending', NOW(3) - INTERVAL 5 MINUTE, NOW(3) - INTERVAL 5 MINUTE)`,
    [callKey, job, messageId],
  );
}

function call(
  tool: ReturnType<typeof createSendEmailTool>,
  callKey: string,
  signal = new AbortController().signal,
) {
  return runToolCall(
    new ToolRegistry([tool]),
    { name: 'send_email', args: { ok: true, value: email } },
    { signal, runId: callKey.split(':')[0]!, callKey, step: 1 },
    RUN_OPTIONS,
  );
}

/** The tool's options every case shares: this file's ledger (unless given), the sink's domain, ten a run. */
function toolBase(transport: SendEmailToolOptions['transport'], ledger = new EffectLedger(pool)) {
  return {
    ledger,
    transport,
    from: 'reports@agent-fleet.local',
    allowedDomains: ['example.com'],
    maxPerRun: 10,
  };
}

/**
 * What the takeover cases share: a sink that holds its reply to the first RCPT until `hold()` (the takeover's
 * send, nothing transmitted yet; `rcpts()` counts the RCPTs it met), a pool of three connections, the tool's options with a short grace, and a
 * lookup that reads the sink.
 */
async function takeoverRig() {
  let hold: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (hold = resolve));
  let rcpts = 0;
  const sink = await startSmtpSink({
    holdReply: (stage) => (stage === 'rcpt' && rcpts++ === 0 ? held : undefined),
  });
  const smtp = new SmtpPool(sink.url, { maxConnections: 3 });
  const options = {
    ...toolBase(smtp),
    pendingGraceMs: 1_000,
    pendingPollMs: 20,
  };
  const lookup = { delivered: async (id: string) => sink.messages.some((m) => m.messageId === id) };
  return { sink, smtp, options, lookup, hold, rcpts: () => rcpts };
}

describe('a pooled connection that breaks mid-send with EHOSTUNREACH', () => {
  it('reports delivery uncertain and never sends again: the server may have the message', async () => {
    // The sink stores the message, then holds its final 250: the message is on the server.
    let hold: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (hold = resolve));
    let holds = 0;
    const sink: SmtpSink = await startSmtpSink({
      holdReply: (stage) => (stage === 'data' && holds++ === 0 ? held : undefined),
    });
    // The client's sockets (smtp-socket.ts opens them with net.connect).
    const sockets: net.Socket[] = [];
    const connect = net.connect.bind(net);
    vi.spyOn(net, 'connect').mockImplementation(((...args: Parameters<typeof net.connect>) => {
      const socket = connect(...args);
      sockets.push(socket);
      return socket;
    }) as typeof net.connect);
    const smtp = new SmtpPool(sink.url, { maxConnections: 1 });
    try {
      const tool = createSendEmailTool({
        ...toolBase(smtp),
        pendingGraceMs: 200,
        pendingPollMs: 20,
      });
      const job = newJob();
      const callKey = `${job}:1:0`;
      const outcome = call(tool, callKey);
      await until(() => holds === 1);
      expect(sockets).toHaveLength(1);
      // An established connection whose route went away: Linux reports the ICMP error on the socket's read, as
      // a timed-out connection that saw "host unreachable" does.
      sockets[0]!.destroy(
        Object.assign(new Error('read EHOSTUNREACH'), { code: 'EHOSTUNREACH', errno: -113, syscall: 'read' }),
      );
      const result = await outcome;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      expect(sink.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
      expect(result.output).toMatch(/^Delivery uncertain/);
      expect((await rowOf(callKey))?.['status']).toBe('pending');
    } finally {
      hold?.();
      smtp.close();
      await sink.close();
    }
  });
});

describe('a taken-over attempt whose send fails late', () => {
  it('does not free the row of the attempt that took it over: the email is sent once', async () => {
    // A server that answers the first RCPT (attempt 1's) with a 451 only when told to, long after the grace,
    // and holds the final reply of the second message (the takeover's, stored) until told to.
    const { SMTPServer } = await import('smtp-server');
    const { simpleParser } = await import('mailparser');
    const stored: string[] = [];
    let refuseFirst: (() => void) | undefined;
    const firstRefused = new Promise<void>((resolve) => (refuseFirst = resolve));
    let finishSecond: (() => void) | undefined;
    const secondFinished = new Promise<void>((resolve) => (finishSecond = resolve));
    let rcpts = 0;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      closeTimeout: 200,
      onRcptTo(_address, _session, callback) {
        if (rcpts++ > 0) return callback();
        void firstRefused.then(() =>
          callback(Object.assign(new Error('try again later'), { responseCode: 451 })),
        );
      },
      onData(stream, _session, callback) {
        void simpleParser(stream).then((parsed) => {
          stored.push(parsed.messageId ?? '');
          void (stored.length === 1 ? secondFinished : Promise.resolve()).then(() => callback());
        });
      },
    });
    server.on('error', () => undefined);
    const port = await new Promise<number>((resolve) => {
      const listener = server.listen(0, '127.0.0.1', () =>
        resolve((listener.address() as net.AddressInfo).port),
      );
    });
    const smtp = new SmtpPool(`smtp://127.0.0.1:${port}`, { maxConnections: 3 });
    try {
      const tool = createSendEmailTool({
        ...toolBase(smtp),
        pendingGraceMs: 200,
        pendingPollMs: 20,
        deliveryLookup: { delivered: async (id: string) => stored.includes(id) },
      });
      const job = newJob();
      const callKey = `${job}:1:0`;
      const messageId = deriveMessageId(callKey, 'agent-fleet.local');
      // Attempt 1 is held at RCPT past the grace (a stalled worker, a slow server).
      const first = call(tool, callKey);
      await until(() => rcpts === 1);
      // Another attempt of the call (a resumed job) waits out the grace, finds it not delivered, takes over.
      const second = call(tool, callKey);
      await until(() => stored.length === 1);
      expect(await rowOf(callKey)).toMatchObject({ status: 'pending', attempt: 2 });
      // Attempt 1's late refusal arrives while the takeover's send is in flight.
      refuseFirst?.();
      await sleep(300);
      finishSecond?.();
      const outcomes = await Promise.all([first, second]);
      expect(outcomes[1]?.output).toMatch(/^Sent to/);
      expect(stored.filter((id) => id === messageId)).toHaveLength(1);
      expect(await rowOf(callKey)).toMatchObject({ status: 'done' });
    } finally {
      refuseFirst?.();
      finishSecond?.();
      smtp.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("the claims of one reply when the job's lock stays busy (GET_LOCK returns 0)", () => {
  it('claim nothing, keep no lock, and the retried calls send each email once', async () => {
    const multi = await createStorePool(url, { multipleStatements: true, connectionLimit: 3 });
    const sink = await startSmtpSink();
    const smtp = new SmtpPool(sink.url, { maxConnections: 3 });
    const holder = await pool.getConnection();
    const name = "CONCAT('af_effect:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?, '/', ?), 256), 48))";
    const job = newJob();
    try {
      await holder.query(`SELECT GET_LOCK(${name}, 0)`, [job, 'send_email']);
      const tool = createSendEmailTool({
        ...toolBase(
          smtp,
          new EffectLedger(multi, { multipleStatements: true, deferDone: true, lockTimeoutSeconds: 1 }),
        ),
      });
      const outcomes = Promise.all([call(tool, `${job}:1:0`), call(tool, `${job}:1:1`)]);
      // Past the first wait for the lock: both claims were refused, and nothing is claimed.
      await sleep(1_300);
      const [rows] = await pool.query<RowDataPacket[]>('SELECT * FROM effect_ledger WHERE job_id = ?', [job]);
      expect(rows).toEqual([]);
      expect(smtp.size).toBeLessThanOrEqual(3);
      await holder.query(`SELECT RELEASE_LOCK(${name})`, [job, 'send_email']);
      const done = await outcomes;
      expect(done.map((o) => o.output)).toEqual([
        expect.stringMatching(/^Sent to/),
        expect.stringMatching(/^Sent to/),
      ]);
      expect(done.map((o) => o.attempts)).toEqual([2, 2]);
      expect(sink.messages).toHaveLength(2);
      // The lock is free again.
      const [got] = await holder.query<RowDataPacket[]>(`SELECT GET_LOCK(${name}, 0) AS got`, [
        job,
        'send_email',
      ]);
      expect(Number(got[0]?.['got'])).toBe(1);
      await holder.query(`SELECT RELEASE_LOCK(${name})`, [job, 'send_email']);
    } finally {
      holder.release();
      smtp.close();
      await sink.close();
      await multi.end();
    }
  });
});

describe('a pooled call cancelled between leasing its connection and its claim', () => {
  it('gives the row back and the connection too: the next call sends at once on it', async () => {
    const sink = await startSmtpSink();
    const smtp = new SmtpPool(sink.url, { maxConnections: 1 });
    const ledger = new EffectLedger(pool);
    const controller = new AbortController();
    // The run is cancelled (a shutdown) while the claim is on its way, after the connection was leased.
    const cancelling = new Proxy(ledger, {
      get(target, property) {
        if (property === 'claim') {
          return (claim: Parameters<EffectLedger['claim']>[0]) => {
            controller.abort('worker-shutdown');
            return target.claim(claim);
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const options = {
      transport: smtp,
      from: 'reports@agent-fleet.local',
      allowedDomains: ['example.com'],
      maxPerRun: 10,
    };
    try {
      const job = newJob();
      const callKey = `${job}:1:0`;
      const cancelled = await call(
        createSendEmailTool({ ...options, ledger: cancelling }),
        callKey,
        controller.signal,
      );
      expect(cancelled.ok).toBe(false);
      // The runner stops waiting at the cancel; the call itself runs on to its end.
      expect(await effectsInFlight.settled(5_000)).toBe(true);
      expect(await rowOf(callKey)).toMatchObject({
        status: 'failed',
        error: 'not delivered: cancelled before sending',
      });
      expect(smtp.size).toBe(1);
      expect(smtp.queued).toBe(0);
      const again = await call(createSendEmailTool({ ...options, ledger }), callKey);
      expect(again.output).toMatch(/^Sent to/);
      expect(sink.messages).toHaveLength(1);
      expect(await rowOf(callKey)).toMatchObject({ status: 'done', attempt: 2 });
    } finally {
      smtp.close();
      await sink.close();
    }
  });
});

describe('a kept, pipelined connection the server drops after the final dot of its second message', () => {
  it('reads as uncertain (the coalesced writes change nothing): not sent again', async () => {
    // Advertises PIPELINING, so the envelope and DATA leave together; accepts the first message, drops the
    // connection once the second one's final dot arrived (the message transmitted, no reply).
    let transmitted = 0;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
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
            buffer = buffer.slice(end + 5);
            inData = false;
            if (++transmitted === 2) {
              socket.destroy();
              return;
            }
            socket.write('250 queued\r\n');
            continue;
          }
          const eol = buffer.indexOf('\r\n');
          if (eol === -1) return;
          const line = buffer.slice(0, eol).toUpperCase();
          buffer = buffer.slice(eol + 2);
          if (line.startsWith('EHLO')) socket.write('250-dropper\r\n250-PIPELINING\r\n250 8BITMIME\r\n');
          else if (line.startsWith('DATA')) {
            inData = true;
            buffer = `\r\n${buffer}`;
            socket.write('354 go ahead\r\n');
          } else socket.write('250 OK\r\n');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const smtp = new SmtpPool(`smtp://127.0.0.1:${port}`, { maxConnections: 1 });
    try {
      const tool = createSendEmailTool({
        ...toolBase(smtp),
        pendingGraceMs: 100,
      });
      const job = newJob();
      expect((await call(tool, `${job}:1:0`)).output).toMatch(/^Sent to/);
      const second = await call(tool, `${job}:1:1`);
      expect(second.output).toMatch(/^Delivery uncertain/);
      expect(second.attempts).toBe(1);
      expect(transmitted).toBe(2);
      expect(await rowOf(`${job}:1:1`)).toMatchObject({ status: 'pending' });
      // Retried (the job resumed): still not sent again.
      await sleep(150);
      expect((await call(tool, `${job}:1:1`)).output).toMatch(/uncertain/i);
      expect(transmitted).toBe(2);
    } finally {
      smtp.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('an attempt whose lookup fails after another attempt took the row over', () => {
  it('does not mark the newer claim uncertain, so a third attempt waits for it rather than sending again', async () => {
    // The takeover's send is held at RCPT (nothing transmitted yet) while the other attempts act.
    const { sink, smtp, options, lookup, hold, rcpts } = await takeoverRig();
    // The takeover's lookup answers after both attempts read the row; the other's fails later (it timed out).
    const takeoverLookup = {
      delivered: async (id: string) => {
        await sleep(100);
        return lookup.delivered(id);
      },
    };
    const failing = {
      delivered: async () => {
        await sleep(400);
        throw new Error('lookup timed out');
      },
    };
    const job = newJob();
    const callKey = `${job}:1:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    try {
      // Attempt 1 stopped after its hand-off, long ago.
      await handedOffLongAgo(callKey, job, messageId);
      // Two attempts of the call meet it at once (a job run twice after a stall): one finds it not delivered
      // and takes it over; the other's lookup fails meanwhile.
      const taking = call(createSendEmailTool({ ...options, deliveryLookup: takeoverLookup }), callKey);
      const failed = await call(createSendEmailTool({ ...options, deliveryLookup: failing }), callKey);
      expect(failed.output).toMatch(/^Delivery uncertain/);
      expect(rcpts()).toBe(1);
      expect(await rowOf(callKey)).toMatchObject({ attempt: 2 });
      // A third attempt (the job retried) meets the row while the takeover's send is under way.
      const third = call(createSendEmailTool({ ...options, deliveryLookup: lookup }), callKey);
      await sleep(300);
      hold();
      const outcomes = await Promise.all([taking, third]);
      expect(outcomes[0]?.output).toMatch(/^Sent to/);
      expect(outcomes[1]?.output).toMatch(/^Sent to/);
      expect(sink.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
    } finally {
      hold();
      smtp.close();
      await sink.close();
    }
  });
});

describe('claims of one job and tool made in one turn with different caps, and a key twice', () => {
  it('each cap holds against every claim of the job, the key is claimed once, and the lock is left free', async () => {
    const multi = await createStorePool(url, { multipleStatements: true, connectionLimit: 3 });
    try {
      for (let round = 0; round < 5; round++) {
        const ledger = new EffectLedger(multi, { multipleStatements: true, deferDone: true });
        const job = newJob();
        const claim = (n: number, maxPerJob: number) =>
          ledger.claim({ effectKey: `${job}:1:${n}`, jobId: job, tool: 'capped', maxPerJob, started: true });
        // Two groups (caps 2 and 3), serialized by the job's lock in whichever order; key 1 asked twice.
        const verdicts = await Promise.all([claim(1, 2), claim(2, 2), claim(1, 2), claim(3, 3), claim(4, 3)]);
        const kinds = verdicts.map((v) => v.kind);
        // The key asked twice: claimed once (the other sees its row), or refused twice when the cap-3 group
        // ran first and left the cap-2 group nothing.
        expect(kinds[2]).toBe(kinds[0] === 'new' ? 'pending' : 'cap_reached');
        const [rows] = await pool.query<RowDataPacket[]>('SELECT * FROM effect_ledger WHERE job_id = ?', [
          job,
        ]);
        const made = verdicts.filter((v) => v.kind === 'new').length;
        expect(rows).toHaveLength(made);
        // The cap-3 group, whichever ran second, never took the job past 3; the cap-2 group never past 2.
        expect(made).toBeLessThanOrEqual(3);
        expect([kinds[0], kinds[1]].filter((k) => k === 'new').length).toBeLessThanOrEqual(2);
        const connection = await pool.getConnection();
        try {
          const name = "CONCAT('af_effect:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?, '/', ?), 256), 48))";
          const [got] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${name}, 0) AS got`, [
            job,
            'capped',
          ]);
          expect(Number(got[0]?.['got'])).toBe(1);
          await connection.query(`SELECT RELEASE_LOCK(${name})`, [job, 'capped']);
        } finally {
          connection.release();
        }
      }
    } finally {
      await multi.end();
    }
  });
});

describe('a takeover of a row never handed off, racing the late hand-off of its attempt (direct transport)', () => {
  it('does not free the row once it is handed off: the email is sent once', async () => {
    const { createSmtpTransport } = await import('../../../src/tools/smtp-transport.js');
    let hold: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (hold = resolve));
    let datas = 0;
    const sink = await startSmtpSink({
      holdReply: (stage) => (stage === 'data' && datas++ === 0 ? held : undefined),
    });
    const transport = createSmtpTransport(sink.url);
    const ledger = new EffectLedger(pool);
    // Attempt 1 stalls between its claim and its hand-off (past the grace); the takeover stalls between its
    // last read of the row (never handed off) and its release, while attempt 1 hands off and transmits.
    let atHandOff = false;
    let handOff: (() => void) | undefined;
    const handOffGate = new Promise<void>((resolve) => (handOff = resolve));
    let atRelease = false;
    let release: (() => void) | undefined;
    const releaseGate = new Promise<void>((resolve) => (release = resolve));
    const gated = (gate: 'markStarted' | 'release') =>
      new Proxy(ledger, {
        get(target, property) {
          const value = Reflect.get(target, property) as unknown;
          if (typeof value !== 'function') return value;
          if (property !== gate) return value.bind(target);
          return async (...args: unknown[]) => {
            if (gate === 'markStarted') {
              atHandOff = true;
              await handOffGate;
            } else {
              atRelease = true;
              await releaseGate;
            }
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const options = {
      transport,
      from: 'reports@agent-fleet.local',
      allowedDomains: ['example.com'],
      maxPerRun: 10,
      pendingGraceMs: 200,
      pendingPollMs: 20,
    };
    const job = newJob();
    const callKey = `${job}:1:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    try {
      const first = call(createSendEmailTool({ ...options, ledger: gated('markStarted') }), callKey);
      await until(() => atHandOff);
      const second = call(createSendEmailTool({ ...options, ledger: gated('release') }), callKey);
      await until(() => atRelease);
      handOff?.();
      await until(() => datas === 1);
      release?.();
      await sleep(300);
      hold?.();
      const outcomes = await Promise.all([first, second]);
      expect(outcomes[0]?.output).toMatch(/^Sent to/);
      expect(sink.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
    } finally {
      handOff?.();
      release?.();
      hold?.();
      transport.close();
      await sink.close();
    }
  });
});

describe("the sweeper's failed lookup of a row another attempt took over meanwhile", () => {
  it('leaves the newer claim pending: a third attempt waits for it, one copy is sent', async () => {
    const { sweepUnsettledEffects, sweptToolsOf } = await import('../../../src/effects/effect-sweeper.js');
    const { sink, smtp, options, lookup, hold } = await takeoverRig();
    const failedFor = new Set<string>();
    const job = newJob();
    const callKey = `${job}:1:0`;
    const messageId = deriveMessageId(callKey, 'agent-fleet.local');
    try {
      await handedOffLongAgo(callKey, job, messageId);
      // The sweeper's lookup hangs and fails; meanwhile a resumed call finds the email missing and sends it.
      const swept = sweepUnsettledEffects({
        ledger: new EffectLedger(pool),
        tools: sweptToolsOf([
          createSendEmailTool({
            ...options,
            deliveryLookup: {
              delivered: async (id: string) => {
                await sleep(400);
                failedFor.add(id);
                throw new Error('lookup timed out');
              },
            },
          }),
        ]),
        logger: { info: () => undefined, warn: () => undefined },
      });
      await sleep(50);
      const taking = call(createSendEmailTool({ ...options, deliveryLookup: lookup }), callKey);
      // Not the whole sweep: it also looks up rows other tests left, one after the other.
      await until(() => failedFor.has(messageId));
      await sleep(100);
      expect(await rowOf(callKey)).toMatchObject({ status: 'pending', attempt: 2 });
      // Another attempt of the call meets the row while the takeover's send is under way.
      const third = call(createSendEmailTool({ ...options, deliveryLookup: lookup }), callKey);
      await sleep(300);
      hold();
      const outcomes = await Promise.all([taking, third]);
      await swept;
      expect(outcomes.map((o) => o.output)).toEqual([
        expect.stringMatching(/^Sent to/),
        expect.stringMatching(/^Sent to/),
      ]);
      expect(sink.messages.filter((m) => m.messageId === messageId)).toHaveLength(1);
    } finally {
      hold();
      smtp.close();
      await sink.close();
    }
  });
});
