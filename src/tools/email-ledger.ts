// send_email's view of the effect ledger (effect-ledger.ts): its rows, keyed by the call key, are effects of
// the tool `send_email` whose `ref` is the Message-ID and whose `detail` holds recipient and subject; a `done`
// row's result says whether it was sent (with the server's reply) or recorded as a dry run. The states the
// tool reasons in map onto the ledger's:
//   pending    claimed; `smtpStartedAt` (the ledger's started_at) is set just before the SMTP transaction
//   sent       done, the server accepted the message (or a lookup found it)
//   dry_run    done, recorded without sending
//   failed     the send certainly did not reach the server; the call may claim the row again
//   uncertain  nothing could tell whether a send that stopped midway reached the server
// Until migration 011 these rows lived in their own table, email_ledger; that table is no longer written.
import type { Pool } from 'mysql2/promise';
import {
  EffectLedger,
  NOT_DONE,
  type EffectClaimResult,
  type EffectLedgerOptions,
  type EffectRow,
} from '../effects/effect-ledger.js';

export const SEND_EMAIL = 'send_email';

export type EmailStatus = 'pending' | 'sent' | 'dry_run' | 'failed' | 'uncertain';

export interface EmailLedgerEntry {
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

export interface EmailClaim {
  callKey: string;
  jobId: string;
  recipient: string;
  subject: string;
  messageId: string;
  /**
   * The per-job cap: the claim is refused (`cap_reached`) when the job already has this many emails sent,
   * pending or recorded as a dry run, not counting this call's own row.
   */
  maxForJob?: number;
  /** Claim it handed off (the caller holds a free SMTP connection and sends at once): one write, not two. */
  handedOff?: boolean;
}

export type ClaimResult =
  | { kind: 'new'; attempt: number }
  | { kind: 'sent' | 'dry_run'; smtpResponse: string | null; entry: EmailLedgerEntry }
  /** The row is pending or uncertain (entry.status says which). */
  | { kind: 'pending'; entry: EmailLedgerEntry }
  | { kind: 'cap_reached'; count: number };

/** How a row's error begins when a late check found its email never arrived and nobody sent it since. */
export const NOT_DELIVERED = 'not delivered';

/** A failed row whose email a check after the fact found missing (the call's own words or the sweeper's). */
export function isNotDelivered(entry: Pick<EmailLedgerEntry, 'status' | 'error'>): boolean {
  return (
    entry.status === 'failed' &&
    (entry.error?.startsWith(NOT_DELIVERED) === true || entry.error?.startsWith(NOT_DONE) === true)
  );
}

export class EmailLedger {
  private readonly effects: EffectLedger;
  /**
   * Present when the ledger defers done records (`deferDone`): the server accepted the message, and the call
   * goes on without waiting for the record, which leaves with those of the emails claimed with it. Resolves
   * once it is in; if it never is, the row stays pending and handed off, for the delivery lookup to settle.
   */
  readonly recordSent?: (callKey: string, smtpResponse: string) => Promise<void>;

  constructor(pool: Pool, options: EffectLedgerOptions = {}) {
    this.effects = new EffectLedger(pool, options);
    if (options.deferDone) {
      this.recordSent = (callKey, smtpResponse) => this.effects.recordDone(callKey, { smtpResponse });
    }
  }

  /**
   * Claims the call's row, atomically: the first claim inserts it as pending (`new`: go ahead and send);
   * any later one gets the row as it stands, except that a `failed` row is claimed again as `new`.
   */
  async claim(claim: EmailClaim): Promise<ClaimResult> {
    const result = await this.effects.claim({
      effectKey: claim.callKey,
      jobId: claim.jobId,
      tool: SEND_EMAIL,
      ref: claim.messageId,
      detail: { recipient: claim.recipient, subject: claim.subject },
      ...(claim.maxForJob !== undefined ? { maxPerJob: claim.maxForJob } : {}),
      ...(claim.handedOff ? { started: true } : {}),
    });
    return toClaimResult(result);
  }

  /** The server accepted the message. */
  async markSent(callKey: string, smtpResponse: string): Promise<void> {
    await this.effects.markDone(callKey, { smtpResponse });
  }

  /** Dry-run mode: recorded as if sent, nothing went to the server. */
  async markDryRun(callKey: string): Promise<void> {
    await this.effects.markDone(callKey, { dryRun: true });
  }

  /** The send certainly did not reach the server: the row may be claimed again. */
  async markFailed(callKey: string, error: string, attempt?: number): Promise<void> {
    await this.effects.markFailed(callKey, error, attempt);
  }

  /**
   * Just before the SMTP transaction: true when this attempt's claim still stands (nobody took the row over),
   * and from now on the row says the server may have the message.
   */
  async markHandedOff(callKey: string, attempt: number): Promise<boolean> {
    return this.effects.markStarted(callKey, attempt);
  }

  /**
   * Takes a row from the attempt that holds it (a given attempt, pending or uncertain) when its email certainly
   * did not reach the server: it becomes `failed`, which the next claim takes again. False when the row had
   * moved on meanwhile. `unstartedOnly`: only while that attempt has not handed it off.
   */
  async release(
    callKey: string,
    attempt: number,
    why: string,
    options: { unstartedOnly?: boolean } = {},
  ): Promise<boolean> {
    return this.effects.release(callKey, attempt, why, options);
  }

  /** Nothing could tell whether the email went out: `uncertain`, never sent again by itself. */
  async markUncertain(callKey: string, why: string, attempt?: number): Promise<boolean> {
    return this.effects.markUncertain(callKey, why, attempt);
  }

  /** The send failed where the server may already have the message: the row stays pending, the error kept. */
  async noteUncertain(callKey: string, error: string, attempt?: number): Promise<void> {
    await this.effects.noteError(callKey, error, attempt);
  }

  /** Emails of a job that count against its cap: sent, pending or uncertain (maybe sent) and dry runs. */
  async countForJob(jobId: string, exceptCallKey?: string): Promise<number> {
    return this.effects.countForJob(jobId, SEND_EMAIL, exceptCallKey);
  }

  async get(callKey: string): Promise<EmailLedgerEntry | null> {
    const row = await this.effects.get(callKey);
    return row === null ? null : toEntry(row);
  }

  async listForJob(jobId: string): Promise<EmailLedgerEntry[]> {
    return (await this.effects.listForJob(jobId, SEND_EMAIL)).map(toEntry);
  }

  /** The rows of these jobs whose email may be missing: uncertain, pending, or failed after the fact. */
  async listDoubtful(jobIds: readonly string[]): Promise<EmailLedgerEntry[]> {
    return (await this.effects.listDoubtful(jobIds, SEND_EMAIL, [NOT_DELIVERED, NOT_DONE])).map(toEntry);
  }
}

function toClaimResult(result: EffectClaimResult): ClaimResult {
  switch (result.kind) {
    case 'new':
    case 'cap_reached':
      return result;
    case 'pending':
      return { kind: 'pending', entry: toEntry(result.row) };
    case 'done': {
      const entry = toEntry(result.row);
      return {
        kind: entry.status === 'dry_run' ? 'dry_run' : 'sent',
        smtpResponse: entry.smtpResponse,
        entry,
      };
    }
  }
}

export function toEntry(row: EffectRow): EmailLedgerEntry {
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
