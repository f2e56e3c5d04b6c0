// send_email's rows of the effect ledger, read in the words its reports use. Its rows, keyed by the call key,
// are effects of the tool `send_email` whose `ref` is the Message-ID and whose `detail` holds recipient and
// subject; a `done` row's result says whether it was sent (`smtpResponse`, the server's reply) or recorded as a
// dry run (`dryRun`). The state machine over them is the general one (docs/side-effects.md); here a done row
// reads as `sent` or `dry_run`, and the call's own started mark as `smtpStartedAt`. Until migration 011 these
// rows lived in their own table, email_ledger; that table is no longer written.
import type { Pool } from 'mysql2/promise';
import { EffectLedger, NOT_DONE, type EffectRow } from '../effects/effect-ledger.js';

export const SEND_EMAIL = 'send_email';

export type EmailStatus = 'pending' | 'sent' | 'dry_run' | 'failed' | 'uncertain';

export interface SentEmail {
  callKey: string;
  jobId: string;
  recipient: string;
  subject: string;
  messageId: string;
  status: EmailStatus;
  smtpResponse: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** Claims of the call so far; the current claim's number. */
  attempt: number;
  /** Set just before the SMTP transaction: null means the attempt never reached the server. */
  smtpStartedAt: Date | null;
  /** Milliseconds since the row last changed, by the database's clock (no skew with the worker's). */
  ageMs: number;
}

/** How a row's error begins when a late check found its email never arrived and nobody sent it since. */
export const NOT_DELIVERED = 'not delivered';

/** A failed row whose email a check after the fact found missing (the call's own words or the sweeper's). */
export function isNotDelivered(entry: Pick<SentEmail, 'status' | 'error'>): boolean {
  return (
    entry.status === 'failed' &&
    (entry.error?.startsWith(NOT_DELIVERED) === true || entry.error?.startsWith(NOT_DONE) === true)
  );
}

/**
 * Reads send_email's rows in its own words (the batch report's "not known to have arrived", the migration
 * check). Writes go through the effect ledger alone: the email is one effect of settleOnce (send-email.ts).
 */
export class SentEmails {
  private readonly effects: EffectLedger;

  constructor(pool: Pool) {
    this.effects = new EffectLedger(pool);
  }

  /** Emails of a job that count against its cap: sent, pending or uncertain (maybe sent) and dry runs. */
  async countForJob(jobId: string, exceptCallKey?: string): Promise<number> {
    return this.effects.countForJob(jobId, SEND_EMAIL, exceptCallKey);
  }

  async get(callKey: string): Promise<SentEmail | null> {
    const row = await this.effects.get(callKey);
    return row === null ? null : toEntry(row);
  }

  async listForJob(jobId: string): Promise<SentEmail[]> {
    return (await this.effects.listForJob(jobId, SEND_EMAIL)).map(toEntry);
  }

  /** The rows of these jobs whose email may be missing: uncertain, pending, or failed after the fact. */
  async listDoubtful(jobIds: readonly string[]): Promise<SentEmail[]> {
    return (await this.effects.listDoubtful(jobIds, SEND_EMAIL, [NOT_DELIVERED, NOT_DONE])).map(toEntry);
  }
}

export function toEntry(row: EffectRow): SentEmail {
  const result = (typeof row.result === 'object' && row.result !== null ? row.result : {}) as {
    smtpResponse?: unknown;
    dryRun?: unknown;
  };
  const status: EmailStatus =
    row.status === 'done' ? (result.dryRun === true ? 'dry_run' : 'sent') : row.status;
  return {
    callKey: row.effectKey,
    jobId: row.jobId,
    recipient: typeof row.detail?.['recipient'] === 'string' ? row.detail['recipient'] : '',
    subject: typeof row.detail?.['subject'] === 'string' ? row.detail['subject'] : '',
    messageId: row.ref,
    status,
    smtpResponse: typeof result.smtpResponse === 'string' ? result.smtpResponse : null,
    error: row.error,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    attempt: row.attempt,
    smtpStartedAt: row.startedAt,
    ageMs: row.ageMs,
  };
}
