// send_email's pooled SMTP connections (src/tools/smtp-pool.ts) against the real demo sink behind a TCP proxy
// that counts connections: reused, bounded in number and queue, closed when idle, replaced when broken, closed
// at shutdown. (That a queued message is never marked handed off is in test/integration/tools/send-email.test.ts.)
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { SmtpPool, type MailLease } from '../../../src/tools/smtp-pool.js';
import { classifySendError } from '../../../src/tools/smtp-transport.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let sink: SmtpSink;
let proxy: TcpProxy;

beforeAll(async () => {
  sink = await startSmtpSink();
  proxy = await startTcpProxy(sink.port);
});

afterAll(async () => {
  await proxy?.close();
  await sink?.close();
});

const mail = (n: number) => ({
  from: 'reports@agent-fleet.local',
  to: `ada${n}@example.com`,
  subject: `pooled ${n}`,
  text: 'Hello',
});

const signal = () => new AbortController().signal;

async function send(pool: SmtpPool, n: number) {
  const lease = await pool.acquire(signal());
  try {
    return await lease.sendMail(mail(n));
  } finally {
    lease.release();
  }
}

type WriteGeneric = (writev: boolean, data: unknown, encoding: unknown, callback: unknown) => unknown;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the pooled SMTP connections', () => {
  it('send several messages over one connection, and at most maxConnections at once', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 2 });
    try {
      const before = proxy.accepted();
      for (let n = 0; n < 4; n++) await send(pool, n);
      expect(proxy.accepted() - before).toBe(1);
      await Promise.all([4, 5, 6, 7, 8].map((n) => send(pool, n)));
      expect(proxy.accepted() - before).toBeLessThanOrEqual(2);
      expect(pool.size).toBe(2);
      expect(sink.messages.filter((m) => m.subject.startsWith('pooled ')).length).toBe(9);
    } finally {
      pool.close();
    }
  });

  it('lend a connection to one waiting send at a time, and refuse sends past the queue bound', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 1, maxQueued: 1 });
    try {
      const held = await pool.acquire(signal());
      let second: MailLease | undefined;
      const waiting = pool.acquire(signal()).then((lease) => (second = lease));
      await expect(pool.acquire(signal())).rejects.toMatchObject({ code: 'email_smtp_busy' });
      await sleep(20);
      expect(second).toBeUndefined();
      expect(pool.queued).toBe(1);
      held.release();
      await waiting;
      expect(second).toBeDefined();
      second?.release();
    } finally {
      pool.close();
    }
  });

  it('give up waiting when the call is cancelled, with nothing sent', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 1 });
    try {
      const held = await pool.acquire(signal());
      const controller = new AbortController();
      const waiting = pool.acquire(controller.signal);
      controller.abort();
      await expect(waiting).rejects.toMatchObject({ code: 'aborted' });
      expect(pool.queued).toBe(0);
      held.release();
    } finally {
      pool.close();
    }
  });

  it('close an idle connection, and open a new one for the next message', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { idleTimeoutMs: 100 });
    try {
      const before = proxy.accepted();
      await send(pool, 20);
      await sleep(400);
      await send(pool, 21);
      expect(proxy.accepted() - before).toBe(2);
    } finally {
      pool.close();
    }
  });

  it('replace a connection whose send failed, and send the next message on a new one', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 1 });
    try {
      await send(pool, 10);
      await proxy.cut();
      await expect(send(pool, 11)).rejects.toBeDefined();
      await proxy.restore();
      const before = proxy.accepted();
      const info = await send(pool, 12);
      expect(info.accepted).toEqual(['ada12@example.com']);
      expect(proxy.accepted() - before).toBe(1);
      expect(pool.size).toBe(1);
    } finally {
      pool.close();
    }
  });

  it('refuse waiting and later sends once closed, and close the connections', async () => {
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 2 });
    await Promise.all([30, 31].map((n) => send(pool, n)));
    expect(pool.size).toBe(2);
    const held = await pool.acquire(signal());
    const other = await pool.acquire(signal());
    const waiting = pool.acquire(signal());
    other.release();
    await waiting.then((lease) => lease.release());
    pool.close();
    // The idle connection is closed at once, the leased one when its send settles.
    expect(pool.size).toBe(1);
    await expect(pool.acquire(signal())).rejects.toMatchObject({ code: 'email_smtp_busy' });
    held.release();
    expect(pool.size).toBe(0);

    const single = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 1 });
    const busy = await single.acquire(signal());
    const queued = single.acquire(signal());
    single.close();
    await expect(queued).rejects.toMatchObject({ code: 'email_smtp_busy' });
    busy.release();
    expect(single.size).toBe(0);
  });

  it('send a message on a kept connection in two socket writes: the envelope, then the message', async () => {
    // Counted on the client's sockets to the proxy (the writes nodemailer makes, before TCP merges or splits
    // them); without the coalesced socket a message went out in six.
    const writes: number[] = [];
    const writeGeneric = (net.Socket.prototype as unknown as { _writeGeneric: WriteGeneric })._writeGeneric;
    const pool = new SmtpPool(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 3 });
    try {
      await Promise.all([20, 21, 22].map((n) => send(pool, n))); // the connections open and greet
      (net.Socket.prototype as unknown as { _writeGeneric: WriteGeneric })._writeGeneric = function (
        this: net.Socket,
        ...args: Parameters<WriteGeneric>
      ) {
        if (this.remotePort === proxy.port) writes.push(1);
        return writeGeneric.apply(this, args);
      };
      await Promise.all([23, 24, 25].map((n) => send(pool, n)));
    } finally {
      (net.Socket.prototype as unknown as { _writeGeneric: WriteGeneric })._writeGeneric = writeGeneric;
      pool.close();
    }
    expect(writes.length).toBe(6);
    expect(sink.messages.filter((m) => /^pooled 2[345]$/.test(m.subject)).length).toBe(3);
  });

  it('fail a send to a port nobody listens on as not sent, before anything is handed over', async () => {
    const closed = await startTcpProxy(sink.port);
    const port = closed.port;
    await closed.close();
    const pool = new SmtpPool(`smtp://127.0.0.1:${port}`, { maxConnections: 1 });
    try {
      const failure = await send(pool, 30).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(String(failure)).toMatch(/ECONNREFUSED/);
      expect(classifySendError(failure)).toMatchObject({ delivery: 'not_sent', transient: true });
    } finally {
      pool.close();
    }
  });
});
