// Approvals in MySQL (agent_approvals, migration 017). A row is asked once per call (its id derives from the call's
// key, so a worker that parks again after a crash finds its row) and decided once: every decision is ONE
// conditional UPDATE on `state = 'pending'`, so however many deciders race, the database lets exactly one win and
// the others see the first decision. A pending row past its expiry is never decided: it becomes `expired`.
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { toJson } from '../store/runs-repository.js';
import { approvalIdOf, type Approval, type ApprovalState, type NewApproval } from './approval.js';
import { approvalSchemaOf, toApproval } from './approval-row.js';

/** Which approvals to list (the API's and the CLI's filters); the desk re-exports it. */
export interface ApprovalFilter {
  state?: ApprovalState;
  jobId?: string;
  batchId?: string;
  tool?: string;
  /** Default 100, at most 1,000; newest first. */
  limit?: number;
}

export interface DecisionRecord {
  decision: 'approve' | 'reject';
  /** The credentials' name (`shell:ada`); stored as the decider. */
  by: string;
  reason?: string | null;
  /** Only with approve; absent or undefined: approved as asked. */
  editedArguments?: unknown;
}

export type DecideResult = 'decided' | 'conflict' | 'not_found';

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1_000;
/** The reason an expired call is rejected with (what the model is told: notApprovedObservation). */
export const EXPIRED_REASON = 'expired';

const ER_DUP_ENTRY = 1062;
const CALL_ID_MAX_CHARS = 128; // the model's id of the call, informational only
const REASON_MAX_CHARS = 10_000; // TEXT holds 64 KB, 4 bytes a character at worst
const BY_MAX_CHARS = 128;

/** Every column but the tool's schema, which only an edit's check reads (argumentsSchemaOf). */
const COLUMNS = `id, job_id, batch_id, tenant, agent, step, call_id, call_key, tool, arguments, state,
  requested_at, expires_at, decided_by, decision, reason, edited_arguments, decided_at`;

/** Rows one expiry changes and reads back at a time (a batch's calls may all expire together). */
const EXPIRE_BATCH = 1_000;

export class ApprovalStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Records the calls that wait. Idempotent by id: a row that exists is left as it was (its first requested_at
   * and expires_at stand). Answers the ids inserted by THIS call, so what follows a first request (an event)
   * happens once however often a worker parks again.
   */
  async request(rows: readonly NewApproval[]): Promise<{ inserted: string[] }> {
    const inserted: string[] = [];
    // One INSERT per row: a duplicate key tells exactly which rows existed, where a multi-row statement's
    // affected count (with the driver's FOUND_ROWS flag) cannot. A park asks for a step's calls: a handful.
    for (const row of rows) {
      const id = approvalIdOf(row.callKey, row.instance);
      try {
        await this.pool.query(
          `INSERT INTO agent_approvals (id, job_id, batch_id, tenant, agent, step, call_id, call_key, tool,
             arguments, arguments_schema, state, requested_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
          [
            id,
            row.jobId,
            row.batchId,
            row.tenant,
            row.agent,
            row.step,
            row.callId.slice(0, CALL_ID_MAX_CHARS),
            row.callKey,
            row.tool,
            toJson(row.arguments ?? null),
            row.argumentsSchema === null ? null : toJson(row.argumentsSchema),
            row.requestedAt,
            row.expiresAt,
          ],
        );
        inserted.push(id);
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== ER_DUP_ENTRY) throw error;
      }
    }
    return { inserted };
  }

  /** The approvals of these calls of one job (its id and creation time), in any state; calls never asked have none. */
  async forCalls(jobId: string, instance: string, callKeys: readonly string[]): Promise<Approval[]> {
    if (callKeys.length === 0) return [];
    const ids = callKeys.map((key) => approvalIdOf(key, instance));
    return this.select('WHERE job_id = ? AND id IN (?) ORDER BY step, call_key', [jobId, ids]);
  }

  /**
   * Pending rows past their expiry become `expired` (a reject with the reason `expired`, by nobody), of one job
   * or all. Answers them, as they are now, for their `approval.decided` events.
   */
  async expireDue(now: Date, jobId?: string): Promise<Approval[]> {
    const where = `state = 'pending' AND expires_at <= ?${jobId === undefined ? '' : ' AND job_id = ?'}`;
    return this.expireWhere(where, jobId === undefined ? [now] : [now, jobId], EXPIRED_REASON, now);
  }

  async get(id: string): Promise<Approval | null> {
    const [approval] = await this.select('WHERE id = ?', [id]);
    return approval ?? null;
  }

  /** The tool's JSON Schema kept with the approval, to check an edit against; null without one (or row). */
  async argumentsSchemaOf(id: string): Promise<Record<string, unknown> | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT arguments_schema FROM agent_approvals WHERE id = ?',
      [id],
    );
    return rows[0] ? approvalSchemaOf(rows[0]) : null;
  }

  /** Newest first; `limit` defaults to 100 and is held to 1..1,000. */
  async list(filter: ApprovalFilter = {}): Promise<Approval[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (column: string, value: string | undefined) => {
      if (value === undefined) return;
      where.push(`${column} = ?`);
      values.push(value);
    };
    add('state', filter.state);
    add('job_id', filter.jobId);
    add('batch_id', filter.batchId);
    add('tool', filter.tool);
    const asked =
      filter.limit !== undefined && Number.isFinite(filter.limit) ? filter.limit : DEFAULT_LIST_LIMIT;
    const limit = Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(asked)));
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    return this.select(`${clause} ORDER BY requested_at DESC, id DESC LIMIT ?`, [...values, limit]);
  }

  /** Every approval of a batch's tasks, oldest first (the batch report). */
  async forBatch(batchId: string): Promise<Approval[]> {
    return this.select('WHERE batch_id = ? ORDER BY requested_at, id', [batchId]);
  }

  /**
   * Pending rows of a job other than `keep` (those of an earlier job of the same id: an id used again; a job has
   * one parked turn at a time) become `expired` with the reason `superseded`: no one decides for a job that is
   * gone, and they would keep the job that has the id now from being woken. A cancelled job's calls go the same
   * way, with the reason `cancelled` (docs/cancelling.md).
   */
  async supersede(
    jobId: string,
    keep: readonly string[],
    now: Date,
    reason: 'superseded' | 'cancelled' = 'superseded',
  ): Promise<Approval[]> {
    const where = `job_id = ? AND state = 'pending'${keep.length > 0 ? ' AND id NOT IN (?)' : ''}`;
    return this.expireWhere(where, keep.length > 0 ? [jobId, keep] : [jobId], reason, now);
  }

  /**
   * The pending rows `where` selects become `expired` with `reason`, a bounded set at a time. Answers those it
   * expired, read back; a row decided meanwhile (the UPDATE asks for `pending` again) is not among them. Two
   * expiring at once may both answer a row: its event's id is the same, so it is published once.
   */
  private async expireWhere(
    where: string,
    values: unknown[],
    reason: string,
    now: Date,
  ): Promise<Approval[]> {
    const expired: Approval[] = [];
    for (;;) {
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT id FROM agent_approvals WHERE ${where} LIMIT ${EXPIRE_BATCH}`,
        values,
      );
      const ids = rows.map((row) => String(row['id']));
      if (ids.length === 0) return expired;
      await this.pool.query(
        `UPDATE agent_approvals SET state = 'expired', decision = 'reject', reason = ?, decided_by = NULL,
           decided_at = ?
         WHERE id IN (?) AND state = 'pending'`,
        [reason, now, ids],
      );
      expired.push(...(await this.select("WHERE id IN (?) AND state = 'expired'", [ids])));
      if (ids.length < EXPIRE_BATCH) return expired;
    }
  }

  /** How many of a batch's calls are in each state: one grouped read, whatever the batch's size. */
  async countsForBatch(batchId: string): Promise<Record<ApprovalState, number>> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT state, COUNT(*) AS n FROM agent_approvals WHERE batch_id = ? GROUP BY state',
      [batchId],
    );
    const counts: Record<ApprovalState, number> = { pending: 0, approved: 0, rejected: 0, expired: 0 };
    for (const row of rows) {
      const state = String(row['state']) as ApprovalState;
      if (state in counts) counts[state] = Number(row['n']);
    }
    return counts;
  }

  /**
   * Records a decision if, and only if, the approval is still pending and not past its expiry, in one
   * conditional UPDATE: `decided` for exactly one of any number of racing deciders, `conflict` for the others
   * (and for a row decided or expired before: a due one is expired here), `not_found` without a row.
   */
  async decide(id: string, record: DecisionRecord, now: Date): Promise<DecideResult> {
    const edited = record.decision === 'approve' ? record.editedArguments : undefined;
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE agent_approvals
       SET state = ?, decision = ?, decided_by = ?, reason = ?, edited_arguments = ?, decided_at = ?
       WHERE id = ? AND state = 'pending' AND expires_at > ?`,
      [
        record.decision === 'approve' ? 'approved' : 'rejected',
        record.decision,
        record.by.slice(0, BY_MAX_CHARS),
        record.reason?.slice(0, REASON_MAX_CHARS) ?? null,
        edited === undefined ? null : toJson(edited),
        now,
        id,
        now,
      ],
    );
    if (header.affectedRows === 1) return 'decided';
    const where = "id = ? AND state = 'pending' AND expires_at <= ?";
    if ((await this.expireWhere(where, [id, now], EXPIRED_REASON, now)).length > 0) return 'conflict';
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT 1 FROM agent_approvals WHERE id = ?', [id]);
    return rows.length > 0 ? 'conflict' : 'not_found';
  }

  /** Calls of the job still waiting (pending rows; one past its expiry counts until it is expired). */
  async pendingCount(jobId: string): Promise<number> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM agent_approvals WHERE job_id = ? AND state = 'pending'",
      [jobId],
    );
    return Number(rows[0]?.['n'] ?? 0);
  }

  /**
   * For the metrics: how many calls wait for a person now, and for how long the oldest has (0 when none). A
   * row past its expiry waits no more, even before anything expired it.
   */
  async pendingStats(now: Date): Promise<{ count: number; oldestAgeSeconds: number }> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n, MIN(requested_at) AS oldest FROM agent_approvals
       WHERE state = 'pending' AND expires_at > ?`,
      [now],
    );
    const count = Number(rows[0]?.['n'] ?? 0);
    const oldest: unknown = rows[0]?.['oldest'];
    const age = oldest instanceof Date ? (now.getTime() - oldest.getTime()) / 1000 : 0;
    return { count, oldestAgeSeconds: Math.max(0, age) };
  }

  private async select(where: string, values: unknown[]): Promise<Approval[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${COLUMNS} FROM agent_approvals ${where}`,
      values,
    );
    return rows.map(toApproval);
  }
}
