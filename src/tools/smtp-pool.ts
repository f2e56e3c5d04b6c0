// Pooled SMTP connections for send_email, with a queue in front that the tool can see. A connection, greeting
// and EHLO per message cost more CPU than the message, so connections are kept open; but a message must not be
// marked "handed off" in the ledger while it still waits for a connection (a wait past the pending grace would
// let a takeover or the sweeper's lookup send it a second time). So a call first leases a free connection
// (waiting here, in a bounded queue, with nothing recorded), then claims its ledger row as handed off, then
// sends on that very connection: the hand-off mark is never older than the send it stands for.
//
// Each connection is a nodemailer pool of one connection that never re-queues a message (a message whose
// connection closed mid-send fails and reads as `unknown`, so at most once holds), closes itself when idle, and
// opens a new connection when its last one broke. A lease holds one such connection; nothing else uses it.
import type { SendMailOptions, SentMessageInfo, Transporter } from 'nodemailer';
import nodemailer from 'nodemailer';
import SMTPPool from 'nodemailer/lib/smtp-pool';
import { ToolError, TransientToolError } from '../kernel/errors.js';
import { smtpConnectionOptions, type SmtpTransportOptions } from './smtp-transport.js';

export interface SmtpPoolOptions extends SmtpTransportOptions {
  /** SMTP_MAX_CONNECTIONS: connections open to the server at most. Default 5. */
  maxConnections?: number;
  /** SMTP_MAX_QUEUED: sends waiting for a free connection at most; one more is refused. Default 1,000. */
  maxQueued?: number;
  /** An idle connection is closed after this many milliseconds (well below a server's 5 minutes). Default 30,000. */
  idleTimeoutMs?: number;
}

/** One free connection, lent to one send. */
export interface MailLease {
  sendMail(mail: SendMailOptions): Promise<SentMessageInfo>;
  /** Gives the connection back (after the send settled, or when the call sends nothing). Idempotent. */
  release(): void;
}

/** What send_email needs of a pool: a free connection, waited for with nothing recorded. */
export interface MailConnections {
  acquire(signal: AbortSignal): Promise<MailLease>;
}

interface Slot {
  transport: Transporter<SentMessageInfo>;
}

interface Waiter {
  resolve(slot: Slot): void;
  reject(error: Error): void;
}

export class SmtpPool implements MailConnections {
  private readonly maxConnections: number;
  private readonly maxQueued: number;
  private readonly free: Slot[] = [];
  private readonly waiting: Waiter[] = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly smtpUrl: string,
    private readonly options: SmtpPoolOptions = {},
  ) {
    this.maxConnections = options.maxConnections ?? 5;
    this.maxQueued = options.maxQueued ?? 1_000;
    // Built once up front so a bad SMTP_URL fails at start, not at the first email.
    smtpConnectionOptions(smtpUrl, options);
  }

  /** Connections open or being opened now (for tests and metrics). */
  get size(): number {
    return this.open;
  }

  /** Sends waiting for a connection now. */
  get queued(): number {
    return this.waiting.length;
  }

  async acquire(signal: AbortSignal): Promise<MailLease> {
    if (this.closed) throw busy('the SMTP connections are closed (the worker is shutting down)');
    if (signal.aborted) throw new ToolError('aborted', 'the call was cancelled; nothing was sent');
    const slot = this.free.pop() ?? (this.open < this.maxConnections ? this.newSlot() : undefined);
    if (slot) return this.lease(slot);
    if (this.waiting.length >= this.maxQueued) {
      throw busy(`${this.waiting.length} emails already wait for an SMTP connection (SMTP_MAX_QUEUED)`);
    }
    return new Promise<MailLease>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new ToolError('aborted', 'the call was cancelled while waiting for SMTP; nothing was sent'));
      };
      const waiter: Waiter = {
        resolve: (s) => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.lease(s));
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Closes every connection; queued and later sends are refused (nothing recorded for them). */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.reject(busy('the SMTP connections were closed'));
    for (const slot of this.free.splice(0)) {
      slot.transport.close();
      this.open--;
    }
    // Leased connections close when their send settles (release sees `closed`).
  }

  private newSlot(): Slot {
    this.open++;
    const pool = new SMTPPool({
      ...smtpConnectionOptions(this.smtpUrl, this.options),
      idleTimeout: this.options.idleTimeoutMs ?? 30_000,
    });
    // After the URL's options were merged in: one connection, reused without limit, and a message is never
    // sent twice by nodemailer itself.
    pool.options.maxConnections = 1;
    pool.options.maxMessages = Infinity;
    pool.options.maxRequeues = 0;
    return { transport: nodemailer.createTransport(pool) as unknown as Transporter<SentMessageInfo> };
  }

  private lease(slot: Slot): MailLease {
    let held = true;
    let broken = false;
    return {
      sendMail: async (mail) => {
        if (!held) throw new Error('sendMail on a released SMTP lease');
        try {
          return await slot.transport.sendMail(mail);
        } catch (error) {
          broken = true;
          throw error;
        }
      },
      release: () => {
        if (!held) return;
        held = false;
        this.giveBack(slot, broken);
      },
    };
  }

  private giveBack(slot: Slot, broken: boolean): void {
    if (this.closed) {
      slot.transport.close();
      this.open--;
      return;
    }
    // After a failed send the connection's state is unknown: replace it rather than reuse it.
    let next = slot;
    if (broken) {
      slot.transport.close();
      this.open--;
      next = this.newSlot();
    }
    const waiter = this.waiting.shift();
    if (waiter) waiter.resolve(next);
    else this.free.push(next);
  }
}

function busy(message: string): TransientToolError {
  return new TransientToolError(`${message}; nothing was sent`, { code: 'email_smtp_busy' });
}
