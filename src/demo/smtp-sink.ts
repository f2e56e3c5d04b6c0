// A local SMTP server that accepts every message and keeps it in memory: the `npm run demo` mailbox and the
// tests' receiving end. Plain SMTP with no AUTH and no STARTTLS, so no certificate is involved; it listens on
// 127.0.0.1 by default and must not be exposed, since it accepts mail from anyone.
import { simpleParser } from 'mailparser';
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
}

export interface SmtpSink {
  /** `smtp://<host>:<port>`, ready for SMTP_URL. */
  url: string;
  port: number;
  /** Every message accepted so far, oldest first. */
  messages: CapturedMessage[];
  close(): Promise<void>;
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const host = options.host ?? '127.0.0.1';
  const messages: CapturedMessage[] = [];
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
          callback();
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

  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `smtp://${urlHost}:${port}`,
    port,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
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
