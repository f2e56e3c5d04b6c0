// send_email's transport keeps its SMTP connections open between messages (a connection, greeting and EHLO per
// message cost more CPU than the message), against the real demo sink behind a TCP proxy that counts connections.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../src/demo/smtp-sink.js';
import { createSmtpTransport } from '../src/tools/smtp-transport.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

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

describe('the SMTP transport', () => {
  it('sends several messages over one connection, and at most maxConnections at once', async () => {
    const transport = createSmtpTransport(`smtp://127.0.0.1:${proxy.port}`, { maxConnections: 2 });
    try {
      const before = proxy.accepted();
      for (let n = 0; n < 4; n++) await transport.sendMail(mail(n));
      expect(proxy.accepted() - before).toBe(1);
      await Promise.all([4, 5, 6, 7, 8].map((n) => transport.sendMail(mail(n))));
      expect(proxy.accepted() - before).toBeLessThanOrEqual(2);
      expect(sink.messages.filter((m) => m.subject.startsWith('pooled ')).length).toBe(9);
    } finally {
      transport.close();
    }
  });

  it('opens a new connection when the server dropped the idle one', async () => {
    const transport = createSmtpTransport(`smtp://127.0.0.1:${proxy.port}`);
    try {
      await transport.sendMail(mail(10));
      await proxy.cut();
      await proxy.restore();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const before = proxy.accepted();
      const info = await transport.sendMail(mail(11));
      expect(info.accepted).toEqual(['ada11@example.com']);
      expect(proxy.accepted() - before).toBe(1);
    } finally {
      transport.close();
    }
  });
});
