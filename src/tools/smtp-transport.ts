// The SMTP side of send_email: a nodemailer transport built from SMTP_URL, and the reading of its errors that
// at-most-once depends on.
import nodemailer from 'nodemailer';
import type { SMTPSentMessageInfo, SMTPTransportOptions, Transporter } from 'nodemailer';
import SMTPTransport from 'nodemailer/lib/smtp-transport';
import { redactUrl } from '../../config/env.js';
import { ConfigError } from '../kernel/errors.js';
import { NOT_CONNECTED_CODES } from '../util/socket-errors.js';
import { openSmtpSocket } from './smtp-socket.js';

export interface SmtpTransportOptions {
  /** Milliseconds to open the TCP connection. Default 10,000. */
  connectionTimeoutMs?: number;
  /** Milliseconds to wait for the server's greeting once connected. Default 10,000. */
  greetingTimeoutMs?: number;
  /** Milliseconds of silence mid-session before giving up. Default 20,000. */
  socketTimeoutMs?: number;
}

export type SmtpTransport = Transporter<SMTPSentMessageInfo, SMTPTransportOptions>;

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/**
 * A transport for `smtp://` or `smtps://` URLs, credentials in the URL's user info, one connection per message
 * (src/tools/smtp-pool.ts keeps connections open). Query parameters of the URL (nodemailer's own, like
 * `?tls.rejectUnauthorized=false`) override the defaults here; pooling cannot be turned on that way because the
 * transport is built directly rather than chosen from the options.
 */
export function createSmtpTransport(smtpUrl: string, options: SmtpTransportOptions = {}): SmtpTransport {
  return nodemailer.createTransport(new SMTPTransport(smtpConnectionOptions(smtpUrl, options)));
}

/** nodemailer's options for one connection to SMTP_URL, the URL checked (a ConfigError naming it). */
export function smtpConnectionOptions(
  smtpUrl: string,
  options: SmtpTransportOptions = {},
): SMTPTransportOptions & { url: string } {
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    throw new ConfigError('bad_smtp_url', `SMTP_URL=${JSON.stringify(redactUrl(smtpUrl))} is not a URL`);
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new ConfigError(
      'bad_smtp_url',
      `SMTP_URL=${JSON.stringify(redactUrl(smtpUrl))} must be smtp:// or smtps://`,
    );
  }
  return {
    url: smtpUrl,
    connectionTimeout: options.connectionTimeoutMs ?? 10_000,
    greetingTimeout: options.greetingTimeoutMs ?? 10_000,
    socketTimeout: options.socketTimeoutMs ?? 20_000,
    // A local sink (the demo's, a developer's MailHog) has no certificate worth checking; plain smtp:// to any
    // other host still upgrades with STARTTLS when the server offers it.
    ignoreTLS: url.protocol === 'smtp:' && isLocalHost(url.hostname),
    logger: false,
    // Our own connect, whose writes coalesce (smtp-socket.ts); a proxy given in the URL keeps nodemailer's.
    ...(url.searchParams.has('proxy') ? {} : { getSocket: openSmtpSocket }),
  };
}

function isLocalHost(hostname: string): boolean {
  return LOCAL_HOSTS.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** What a failed send means for at-most-once. */
export interface SendFailure {
  /**
   * `not_sent`: the server certainly did not accept the message (refused it, or was never reached), so it
   * may be tried again. `unknown`: the connection broke at a point where the server may already have it.
   */
  delivery: 'not_sent' | 'unknown';
  /** Worth trying again soon: the server was unreachable or answered with a temporary (4xx) reply. */
  transient: boolean;
  /** One line for the model and the ledger. */
  summary: string;
}

// nodemailer's own refusals and setup failures: the message was never handed over.
const REFUSED_BEFORE_DATA = new Set([
  'EENVELOPE',
  'EMESSAGE',
  'EMAXRECIPIENTS',
  'ECONFIG',
  'EFILEACCESS',
  'EURLACCESS',
  'EAUTH',
  'ENOAUTH',
  'EOAUTH2',
  'ETLS',
  'EREQUIRETLS',
]);

/** The system calls of a socket that is connected: an error from one of them broke a session. */
const MID_SESSION_SYSCALLS = new Set(['read', 'write', 'writev']);

interface NodemailerErrorFields {
  code?: unknown;
  originalCode?: unknown;
  syscall?: unknown;
  command?: unknown;
  response?: unknown;
  responseCode?: unknown;
  permanent?: unknown;
  timeoutType?: unknown;
}

/** Reads a nodemailer error. Anything it does not recognise counts as `unknown`: at most once wins. */
export function classifySendError(error: unknown): SendFailure {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as NodemailerErrorFields;
  const message = error instanceof Error ? error.message : String(error);
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const responseCode = typeof fields.responseCode === 'number' ? fields.responseCode : undefined;
  const response = typeof fields.response === 'string' ? oneLine(fields.response) : undefined;

  // A 4xx/5xx reply is the server saying no: it did not take the message, whatever step it answered.
  if (responseCode !== undefined && responseCode >= 400) {
    const transient = fields.permanent === false || (responseCode < 500 && fields.permanent !== true);
    return {
      delivery: 'not_sent',
      transient,
      summary: `the SMTP server refused the message (${response ?? responseCode})`,
    };
  }
  const originalCode = typeof fields.originalCode === 'string' ? fields.originalCode : undefined;
  // EHOSTUNREACH and its kin also end an established connection (an ICMP error reported on its read or write,
  // after the message may have gone out): they prove "never connected" only when they did not come from one.
  const midSession = MID_SESSION_SYSCALLS.has(String(fields.syscall));
  if (
    code === 'EDNS' ||
    (!midSession && originalCode !== undefined && NOT_CONNECTED_CODES.has(originalCode)) ||
    (!midSession && code !== undefined && NOT_CONNECTED_CODES.has(code)) ||
    (code === 'ESOCKET' && fields.syscall === 'connect')
  ) {
    return {
      delivery: 'not_sent',
      transient: true,
      summary: `the SMTP server could not be reached (${message})`,
    };
  }
  if (
    code === 'ETIMEDOUT' &&
    (fields.timeoutType === 'CONNECT_TIMEOUT' || fields.timeoutType === 'GREETING_TIMEOUT')
  ) {
    return { delivery: 'not_sent', transient: true, summary: `the SMTP server did not answer (${message})` };
  }
  // A connection that was already closed before this message was given to it.
  if (code === 'ECONNECTION' && fields.command === 'API') {
    return { delivery: 'not_sent', transient: true, summary: `the SMTP connection was closed (${message})` };
  }
  if (code !== undefined && REFUSED_BEFORE_DATA.has(code)) {
    return {
      delivery: 'not_sent',
      transient: false,
      summary: `the email could not be sent (${code}: ${message})`,
    };
  }
  return {
    delivery: 'unknown',
    transient: false,
    summary: `the SMTP connection failed mid-send (${code ?? 'error'}: ${message})`,
  };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300);
}
