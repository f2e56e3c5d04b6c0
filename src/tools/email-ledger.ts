// The ledger that makes send_email happen at most once per call (CONTRACT §7). A call claims its row, keyed by
// the call key that is stable across retries and resumes, before it talks to the SMTP server, and settles the
// row afterwards. Whoever finds the row already there learns what happened instead of sending again:
//   pending  claimed; the attempt that claimed it is sending, or crashed before recording the outcome
//   sent     the server accepted the message (smtp_response holds its reply)
//   dry_run  recorded without sending
//   failed   the send certainly did not reach the server; the call may claim the row again
//   uncertain  nothing could tell whether a send that stopped midway reached the server: never sent again by
//            itself; a delivery lookup may still settle it later (email-sweeper.ts)
// Each claim of a call counts an attempt; an attempt marks the row just before its SMTP transaction
// (smtp_started_at), and only while its claim still stands, so a row without the mark proves nothing was sent.
// Claims of one job are serialized by a named lock when a per-job cap is given, so parallel calls of one job
// cannot all pass the count before any of them is recorded.
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { StoreError } from '../store/errors.js';

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
}

export type ClaimResult =
  | { kind: 'new'; attempt: number }
  | { kind: 'sent' | 'dry_run'; smtpResponse: string | null; entry: EmailLedgerEntry }
  /** The row is pending or uncertain (entry.status says which). */
  | { kind: 'pending'; entry: EmailLedgerEntry }
  | { kind: 'cap_reached'; count: number };

/** How a row's error begins when a late check found its email never arrived and nobody sent it since. */
export const NOT_DELIVERED = 'not delivered';

const TEXT_MAX_CHARS = 10_000; // a TEXT column holds 64 KB, 4 bytes a character at worst
const ER_DUP_ENTRY = 1062;

// The lock is server-wide, so its name includes the database; GET_LOCK names are limited to 64 characters,
// hence the hash. Computed in SQL so acquiring and releasing use the very same expression.
const LOCK_NAME = "CONCAT('af_email:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?), 256), 48))";

const rowSchema = z.object({
  call_key: z.string(),
  job_id: z.string(),
  recipient: z.string(),
  subject: z.string(),
  message_id: z.string(),
  status: z.enum(['pending', 'sent', 'dry_run', 'failed', 'uncertain']),
  smtp_response: z.string().nullable(),
  error: z.string().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
  attempt: z.number().int(),
  smtp_started_at: z.date().nullable(),
  age_ms: z.union([z.number(), z.string().regex(/^-?\d+$/)]).transform(Number),
});

/** Every column, and the row's age by the server's clock. */
const SELECT_ROW =
  'SELECT *, TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(3)) DIV 1000 AS age_ms FROM email_ledger';

export class EmailLedger {
  constructor(
    private readonly pool: Pool,
    private readonly options: { lockTimeoutSeconds?: number } = {},
  ) {}

  /**
   * Claims the call's row, atomically: the first claim inserts it as pending (`new`: go ahead and send);
   * any later one gets the row as it stands, except that a `failed` row is claimed again as `new`.
   */
  async claim(claim: EmailClaim): Promise<ClaimResult> {
    const connection = await this.pool.getConnection();
    let locked = false;
    try {
      if (claim.maxForJob !== undefined) {
        await this.lockJob(connection, claim.jobId);
        locked = true;
      }
      return await this.claimOn(connection, claim);
    } finally {
      await release(connection, locked ? claim.jobId : undefined);
    }
  }

  /** The server accepted the message. */
  async markSent(callKey: string, smtpResponse: string): Promise<void> {
    await this.settle(callKey, 'sent', clip(smtpResponse), null);
  }

  /** Dry-run mode: recorded as if sent, nothing went to the server. */
  async markDryRun(callKey: string): Promise<void> {
    await this.settle(callKey, 'dry_run', null, null);
  }

  /** The send certainly did not reach the server: the row may be claimed again. */
  async markFailed(callKey: string, error: string): Promise<void> {
    await this.settle(callKey, 'failed', null, clip(error));
  }

  /**
   * Just before the SMTP transaction: true when this attempt's claim still stands (nobody took the row over),
   * and from now on the row says the server may have the message.
   */
  async markHandedOff(callKey: string, attempt: number): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE email_ledger SET smtp_started_at = CURRENT_TIMESTAMP(3), updated_at = CURRENT_TIMESTAMP(3)
       WHERE call_key = ? AND status = 'pending' AND attempt = ? AND smtp_started_at IS NULL`,
      [callKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /**
   * Takes a row from the attempt that holds it (a given attempt, pending or uncertain) when its email certainly
   * did not reach the server: it becomes `failed`, which the next claim takes again. False when the row had
   * moved on meanwhile.
   */
  async release(callKey: string, attempt: number, why: string): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE email_ledger SET status = 'failed', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE call_key = ? AND status IN ('pending', 'uncertain') AND attempt = ?`,
      [clip(why), callKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /**
   * Nothing could tell whether the email went out (no delivery lookup, or it failed): the row is `uncertain`,
   * never sent again by itself; a lookup may still settle it later. False when the row had moved on.
   */
  async markUncertain(callKey: string, why: string): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE email_ledger SET status = 'uncertain', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE call_key = ? AND status IN ('pending', 'uncertain')`,
      [clip(why), callKey],
    );
    return header.affectedRows === 1;
  }

  /**
   * The send failed at a point where the server may already have accepted the message: the row stays
   * pending (nobody sends it again) and the error is kept for whoever investigates.
   */
  async noteUncertain(callKey: string, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE email_ledger SET error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE call_key = ? AND status = 'pending'`,
      [clip(error), callKey],
    );
  }

  /** Emails of a job that count against its cap: sent, pending or uncertain (maybe sent) and dry runs. */
  async countForJob(jobId: string, exceptCallKey?: string): Promise<number> {
    return this.countOn(this.pool, jobId, exceptCallKey);
  }

  async get(callKey: string): Promise<EmailLedgerEntry | null> {
    return this.read(this.pool, callKey);
  }

  async listForJob(jobId: string): Promise<EmailLedgerEntry[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW} WHERE job_id = ? ORDER BY created_at, call_key`,
      [jobId],
    );
    return rows.map(toEntry);
  }

  /**
   * Rows nobody is settling, unchanged for `olderThanMs` (no live attempt holds a row that long): pending ones,
   * then uncertain ones when asked (only a lookup can still settle those, and many that it cannot must not
   * crowd out the pending), oldest change first.
   */
  async listUnsettled(
    olderThanMs: number,
    options: { includeUncertain?: boolean; limit?: number } = {},
  ): Promise<EmailLedgerEntry[]> {
    const statuses = options.includeUncertain ? ['pending', 'uncertain'] : ['pending'];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW}
       WHERE status IN (?) AND updated_at <= NOW(3) - INTERVAL ? MICROSECOND
       ORDER BY status <> 'pending', updated_at LIMIT ?`,
      [statuses, Math.max(0, Math.floor(olderThanMs)) * 1000, options.limit ?? 100],
    );
    return rows.map(toEntry);
  }

  /** The rows of these jobs whose email may be missing: uncertain, pending, or failed after the fact. */
  async listDoubtful(jobIds: readonly string[]): Promise<EmailLedgerEntry[]> {
    if (jobIds.length === 0) return [];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW}
       WHERE job_id IN (?) AND (status IN ('pending', 'uncertain') OR (status = 'failed' AND error LIKE ?))
       ORDER BY job_id, call_key`,
      [jobIds, `${NOT_DELIVERED}%`],
    );
    return rows.map(toEntry);
  }

  private async claimOn(connection: PoolConnection, claim: EmailClaim): Promise<ClaimResult> {
    // Rows are never deleted, so each round either decides or sees a concurrent claim's row; three rounds
    // cover an insert race followed by a failed row being re-claimed by someone else.
    for (let round = 0; round < 3; round++) {
      const existing = await this.read(connection, claim.callKey);
      if (existing && existing.status !== 'failed') return settled(existing);
      if (claim.maxForJob !== undefined) {
        const count = await this.countOn(connection, claim.jobId, claim.callKey);
        if (count >= claim.maxForJob) return { kind: 'cap_reached', count };
      }
      if (existing) {
        // Failed earlier without reaching the server: take it back, for whatever this attempt sends.
        const [header] = await connection.query<ResultSetHeader>(
          `UPDATE email_ledger
           SET status = 'pending', recipient = ?, subject = ?, message_id = ?, smtp_response = NULL,
             error = NULL, attempt = attempt + 1, smtp_started_at = NULL, updated_at = CURRENT_TIMESTAMP(3)
           WHERE call_key = ? AND status = 'failed' AND attempt = ?`,
          [claim.recipient, claim.subject, claim.messageId, claim.callKey, existing.attempt],
        );
        if (header.affectedRows === 1) return { kind: 'new', attempt: existing.attempt + 1 };
        continue;
      }
      try {
        await connection.query(
          `INSERT INTO email_ledger (call_key, job_id, recipient, subject, message_id, status)
           VALUES (?, ?, ?, ?, ?, 'pending')`,
          [claim.callKey, claim.jobId, claim.recipient, claim.subject, claim.messageId],
        );
        return { kind: 'new', attempt: 1 };
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== ER_DUP_ENTRY) throw error;
      }
    }
    throw new StoreError('email_ledger_contended', `could not claim email ${claim.callKey}: too many races`, {
      retryable: true,
    });
  }

  private async settle(
    callKey: string,
    status: Exclude<EmailStatus, 'pending'>,
    smtpResponse: string | null,
    error: string | null,
  ): Promise<void> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE email_ledger SET status = ?, smtp_response = ?, error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE call_key = ? AND status IN ('pending', 'uncertain')`,
      [status, smtpResponse, error, callKey],
    );
    // Only an open row (pending, uncertain) moves on: a settled outcome is never overwritten by a late attempt.
    if (header.affectedRows !== 1) {
      throw new StoreError('email_ledger_state', `email ${callKey} is not pending; cannot mark it ${status}`);
    }
  }

  private async read(db: Pool | PoolConnection, callKey: string): Promise<EmailLedgerEntry | null> {
    const [rows] = await db.query<RowDataPacket[]>(`${SELECT_ROW} WHERE call_key = ?`, [callKey]);
    return rows[0] ? toEntry(rows[0]) : null;
  }

  private async countOn(db: Pool | PoolConnection, jobId: string, exceptCallKey?: string): Promise<number> {
    const [rows] = await db.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM email_ledger
       WHERE job_id = ? AND status IN ('pending', 'sent', 'dry_run', 'uncertain') AND call_key <> ?`,
      [jobId, exceptCallKey ?? ''],
    );
    return Number(rows[0]?.['n'] ?? 0);
  }

  private async lockJob(connection: PoolConnection, jobId: string): Promise<void> {
    const timeout = this.options.lockTimeoutSeconds ?? 10;
    const [rows] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS got`, [
      jobId,
      timeout,
    ]);
    if (Number(rows[0]?.['got']) !== 1) {
      throw new StoreError('email_ledger_lock_timeout', `email lock of job ${jobId} busy for ${timeout}s`, {
        retryable: true,
      });
    }
  }
}

function settled(entry: EmailLedgerEntry): ClaimResult {
  if (entry.status === 'sent' || entry.status === 'dry_run') {
    return { kind: entry.status, smtpResponse: entry.smtpResponse, entry };
  }
  return { kind: 'pending', entry };
}

async function release(connection: PoolConnection, lockedJobId: string | undefined): Promise<void> {
  if (lockedJobId === undefined) {
    connection.release();
    return;
  }
  try {
    await connection.query(`SELECT RELEASE_LOCK(${LOCK_NAME})`, [lockedJobId]);
    connection.release();
  } catch {
    // A lock belongs to its session: closing the connection is the sure way to free it.
    connection.destroy();
  }
}

function toEntry(row: RowDataPacket): EmailLedgerEntry {
  const parsed = rowSchema.safeParse(row);
  if (!parsed.success) {
    throw new StoreError('email_ledger_row', `unexpected email_ledger row: ${parsed.error.message}`);
  }
  const r = parsed.data;
  return {
    callKey: r.call_key,
    jobId: r.job_id,
    recipient: r.recipient,
    subject: r.subject,
    messageId: r.message_id,
    status: r.status,
    smtpResponse: r.smtp_response,
    error: r.error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    attempt: r.attempt,
    smtpStartedAt: r.smtp_started_at,
    ageMs: r.age_ms,
  };
}

function clip(text: string): string {
  return text.length > TEXT_MAX_CHARS ? text.slice(0, TEXT_MAX_CHARS) : text;
}
