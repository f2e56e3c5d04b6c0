// A local SMTP server that accepts every message and keeps it in memory: the `npm run demo` mailbox and the
// tests' receiving end. Plain SMTP with no AUTH and no STARTTLS, so no certificate is involved; it listens on
// 127.0.0.1 by default and must not be exposed, since it accepts mail from anyone.
import { simpleParser } from 'mailparser';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';

export interface CapturedMessage {
  /** The envelope sender (MAIL FROM), not the From header. */
  from: string;
  /** The envelope recipients (RCPT TO), where the message was really routed. */
  to: string[];
  subject: string;
  text: string;
  /** The Message-ID header, with its angle brackets; empty if the message had none. */
  messageId: string;
  receivedAt: Date;
  /** The message as received, headers and body, for looking at anything else. */
  raw: string;
}

export interface SmtpSinkOptions {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  /** Largest message accepted, in bytes; bigger ones are refused with 552. Default 1 MiB. */
  maxMessageBytes?: number;
  /** Called for each message once it is stored; an exception here is ignored, the message stays accepted. */
  onMessage?: (message: CapturedMessage) => void;
  /**
   * For tests of a send cut short: delays the reply at a stage until the promise settles. `rcpt`: before
   * the recipient is accepted (nothing transmitted yet); `data`: after the message is stored (and visible to
   * the lookup), before the final 250 reply. Return undefined not to hold.
   */
  holdReply?: (stage: 'rcpt' | 'data') => Promise<void> | undefined;
}

export interface SmtpSink {
  /** `smtp://<host>:<port>`, ready for SMTP_URL. */
  url: string;
  port: number;
  /**
   * `http://<host>:<port>/delivered`: answers `{"delivered": bool}` for `?message-id=<id>`, so a worker
   * that crashed mid-send can tell whether the message arrived (SMTP_LOOKUP_URL).
   */
  lookupUrl: string;
  /** Every message accepted so far, oldest first. */
  messages: CapturedMessage[];
  close(): Promise<void>;
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const host = options.host ?? '127.0.0.1';
  const messages: CapturedMessage[] = [];
  const held = async (stage: 'rcpt' | 'data') => {
    await options.holdReply?.(stage)?.catch(() => undefined);
  };
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: options.maxMessageBytes ?? 1024 * 1024,
    rejectOversized: true,
    logger: false,
    banner: 'agent-fleet SMTP sink',
    // close() waits this long for clients in the middle of a session before cutting them off.
    closeTimeout: 1000,
    onRcptTo(_address, _session, callback) {
      void held('rcpt').then(() => callback());
    },
    onData(stream, session, callback) {
      capture(stream, session).then(
        (message) => {
          if (message === undefined) return callback(); // oversized: the server sends the 552 itself
          messages.push(message);
          try {
            options.onMessage?.(message);
          } catch {
            // the observer's problem, not the sender's
          }
          void held('data').then(() => callback());
        },
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
      );
    },
  });
  // Errors of single connections (a client that hangs up) end up here; they must not crash the process.
  server.on('error', () => undefined);

  const port = await new Promise<number>((resolve, reject) => {
    const listener = server.listen(options.port ?? 0, host, () => {
      listener.off('error', reject);
      const address = listener.address();
      resolve(typeof address === 'object' && address !== null ? address.port : (options.port ?? 0));
    });
    listener.once('error', reject);
  });

  const lookup = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sink');
    const messageId = url.searchParams.get('message-id');
    if (url.pathname !== '/delivered' || !messageId) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
      return;
    }
    const delivered = messages.some((message) => message.messageId === messageId);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ delivered }));
  });
  const lookupPort = await new Promise<number>((resolve, reject) => {
    lookup.once('error', reject);
    lookup.listen(0, host, () => resolve((lookup.address() as AddressInfo).port));
  });

  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `smtp://${urlHost}:${port}`,
    port,
    lookupUrl: `http://${urlHost}:${lookupPort}/delivered`,
    messages,
    close: async () => {
      lookup.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => lookup.close(() => resolve())),
      ]);
    },
  };
}

async function capture(
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
): Promise<CapturedMessage | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  if (stream.sizeExceeded) return undefined;
  const raw = Buffer.concat(chunks);
  const parsed = await simpleParser(raw);
  const { mailFrom, rcptTo } = session.envelope;
  return {
    from: mailFrom === false ? '' : mailFrom.address,
    to: rcptTo.map((recipient) => recipient.address),
    subject: parsed.subject ?? '',
    text: parsed.text ?? '',
    messageId: parsed.messageId ?? '',
    receivedAt: new Date(),
    raw: raw.toString('utf8'),
  };
}
