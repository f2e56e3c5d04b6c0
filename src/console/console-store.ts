// What the run console reads from the fleet's store: runs by filter, one run with its steps, one batch, the
// count of pending approvals, agents' notes (approvals themselves are read and decided through the approval desk). Read
// only (SELECT), through the board's own small pool; rows are parsed by src/store/rows.ts, as everywhere.
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { STOP_REASONS, type StopReason } from '../kernel/types.js';
import { BatchReportStore, type LoadedBatch } from '../reports/report-store.js';
import type { Note, NoteListFilter } from '../notes/note.js';
import { MysqlNoteStore } from '../notes/notes-store.js';
import { mysqlErrorCode } from '../store/mysql-errors.js';
import { toRunRow, toStepRow, type RunRowStatus } from '../store/rows.js';
import type { ConsoleRun, ConsoleStep, TreeChild } from './timeline.js';

export const RUN_STATUSES: readonly RunRowStatus[] = ['running', 'succeeded', 'stopped', 'failed'];
export { STOP_REASONS };
export const RUN_LIST_LIMIT = 200;
/** A turn starts at most 8 children and a run has at most 50 steps: a run calls at most 400. */
const CHILDREN_SHOWN = 400;

export interface RunFilters {
  batch?: string;
  agent?: string;
  /** Runs of this tenant (the task's `tenant`). */
  tenant?: string;
  status?: RunRowStatus;
  stopReason?: StopReason;
  /** Runs started on or after this instant. */
  from?: Date;
  /** Runs started before this instant. */
  to?: Date;
}

/** A pool, or how to get one: the board makes its pool on the first console request, so a store that is down
 * when the board starts costs the console only, and a failed attempt is made again on the next request. */
export type PoolSource = Pool | (() => Promise<Pool>);

export class ConsoleStore {
  private pending: Promise<Pool> | null = null;
  /**
   * Said with a run or a batch not found: read from MYSQL_READ_URL's replica, one just started may not be there
   * yet. Empty for MYSQL_URL.
   */
  readonly notFoundNote: string;

  constructor(
    private readonly source: PoolSource,
    options: { replica?: boolean } = {},
  ) {
    this.notFoundNote = options.replica
      ? ' (read from MYSQL_READ_URL, a replica: one written in the last moments may not be there yet)'
      : '';
  }

  private pool(): Promise<Pool> {
    if (typeof this.source !== 'function') return Promise.resolve(this.source);
    const source = this.source;
    this.pending ??= source().catch((error: unknown) => {
      this.pending = null;
      throw error;
    });
    return this.pending;
  }

  /** The newest runs (at most RUN_LIST_LIMIT) matching every filter given. */
  async listRuns(filters: RunFilters): Promise<ConsoleRun[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      where.push(sql);
      values.push(value);
    };
    if (filters.batch !== undefined) add('batch_id = ?', filters.batch);
    if (filters.agent !== undefined) {
      // Runs recorded before agents were stored served the default agent.
      if (filters.agent === 'default') add("COALESCE(agent, 'default') = ?", filters.agent);
      else add('agent = ?', filters.agent);
    }
    if (filters.tenant !== undefined) add('tenant = ?', filters.tenant);
    if (filters.status !== undefined) add('status = ?', filters.status);
    if (filters.stopReason !== undefined) add('stop_reason = ?', filters.stopReason);
    if (filters.from !== undefined) add('started_at >= ?', filters.from);
    if (filters.to !== undefined) add('started_at < ?', filters.to);
    const pool = await this.pool();
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT * FROM agent_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY started_at DESC, job_id DESC LIMIT ${RUN_LIST_LIMIT}`,
      values,
    );
    return rows.map(toRunRow);
  }

  /** One run and its steps, or null when there is no such run. */
  async loadRun(
    jobId: string,
  ): Promise<{ run: ConsoleRun; steps: ConsoleStep[]; children: TreeChild[] } | null> {
    const pool = await this.pool();
    const [runs] = await pool.query<RowDataPacket[]>('SELECT * FROM agent_runs WHERE job_id = ?', [jobId]);
    const raw = runs[0];
    if (raw === undefined) return null;
    const [steps] = await pool.query<RowDataPacket[]>(
      'SELECT * FROM agent_steps WHERE job_id = ? ORDER BY step',
      [jobId],
    );
    return {
      run: toRunRow(raw),
      steps: steps.map(toStepRow),
      children: await this.childrenOf(pool, jobId),
    };
  }

  /** The runs a run's agent called, in the order they started; none on a store older than migration 018. */
  private async childrenOf(pool: Pool, jobId: string): Promise<TreeChild[]> {
    try {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT job_id, agent, status, stop_reason, cost_usd, prompt_tokens, completion_tokens
         FROM agent_runs WHERE parent_job_id = ? ORDER BY started_at, job_id LIMIT ?`,
        [jobId, CHILDREN_SHOWN],
      );
      return rows.map((row) => ({
        jobId: String(row['job_id']),
        agent: String(row['agent'] ?? 'default'),
        status: row['status'] as RunRowStatus,
        stopReason: (row['stop_reason'] as StopReason | null) ?? null,
        costUsd: Number(row['cost_usd'] ?? 0),
        totalTokens: Number(row['prompt_tokens'] ?? 0) + Number(row['completion_tokens'] ?? 0),
      }));
    } catch (error) {
      if (mysqlErrorCode(error) === 'ER_BAD_FIELD_ERROR') return [];
      throw error;
    }
  }

  /** A batch and its tasks' runs (the batch report's reading of them), or null. */
  async loadBatch(batchId: string): Promise<LoadedBatch | null> {
    return new BatchReportStore(await this.pool()).loadBatch(batchId);
  }

  /**
   * How many approvals wait for a decision (past its expiry, a call waits no more), for the console's
   * navigation; null when the store has no approvals table yet (no worker has run migration 017), so an older
   * store still shows its runs.
   */
  async countPendingApprovals(): Promise<number | null> {
    const pool = await this.pool();
    try {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS pending FROM agent_approvals WHERE state = 'pending' AND expires_at > NOW(3)",
      );
      return Number(rows[0]?.['pending'] ?? 0);
    } catch (error) {
      if (mysqlErrorCode(error) === 'ER_NO_SUCH_TABLE') return null;
      throw error;
    }
  }

  /**
   * Agents' live notes, newest first, through the notes store's own query; none when the store has no notes
   * table yet (no worker has run migration 019), as for approvals.
   */
  async listNotes(filter: NoteListFilter): Promise<Note[]> {
    try {
      return await new MysqlNoteStore(await this.pool()).list(filter);
    } catch (error) {
      if (mysqlErrorCode(error) === 'ER_NO_SUCH_TABLE') return [];
      throw error;
    }
  }

  /** Ends the pool, if one was made. */
  async close(): Promise<void> {
    const pool = await this.pending?.catch(() => null);
    await pool?.end().catch(() => undefined);
  }
}
