// Runs left `running` by a crash: a worker that died between a run's start and its end (or lost the record of
// its end) leaves the row `running`, and nothing else would ever end it. The rule (docs/store.md#retention): a row
// still `running` and not written for ABANDONED_AFTER_MS is looked up in the fleet's queue; when Redis no longer
// has its job, or has it failed, the run can never end, and is marked `failed` with the error code `abandoned`.
// When Redis has it completed with its result (the record of its end was lost), that result is recorded. A job
// Redis still holds (waiting, delayed, active, parked on an approval or on its children, or failed with its
// outcome kept for MySQL: the lookup says `live`) is left to its worker, however old: only the worker knows how
// it ends. Rows are taken batchSize at a time through the (status, started_at) key and written by primary key,
// with the state and age checked again.
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { AgentResult } from '../../kernel/types.js';
import type { RunError } from '../../kernel/errors.js';
import { RunsRepository } from '../runs-repository.js';
import type { PruneBatches } from './prune-batches.js';

/** A run's row unchanged this long, and its job gone, is abandoned: far past a flush, a retry's wait, a stall check. */
export const ABANDONED_AFTER_MS = 3_600_000;

/** What the fleet's queue says of a run's job. */
export type RunJobState =
  | { state: 'gone' }
  | { state: 'failed'; reason: string }
  | { state: 'completed'; result: unknown; finishedAt: Date | null }
  | { state: 'live' };

export type RunJobLookup = (jobId: string) => Promise<RunJobState>;

export interface SettledRuns {
  /** Marked failed, `abandoned`. */
  abandoned: number;
  /** Given the result their completed job holds. */
  recorded: number;
}

export function abandonedError(reason: string): RunError {
  return { kind: 'system', code: 'abandoned', message: reason.slice(0, 1_000), retryable: false };
}

export async function settleAbandonedRuns(
  options: PruneBatches,
  lookup: RunJobLookup,
  now: Date,
): Promise<SettledRuns> {
  const { pool, batchSize } = options;
  const quiet = new Date(now.getTime() - ABANDONED_AFTER_MS);
  const settled: SettledRuns = { abandoned: 0, recorded: 0 };
  let after: { startedAt: Date; jobId: string } | null = null;
  for (;;) {
    const from = after;
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT job_id, started_at FROM agent_runs
       WHERE status = 'running' AND started_at < ? AND updated_at < ?
         ${from ? 'AND (started_at > ? OR (started_at = ? AND job_id > ?))' : ''}
       ORDER BY started_at, job_id LIMIT ?`,
      from
        ? [quiet, quiet, from.startedAt, from.startedAt, from.jobId, batchSize]
        : [quiet, quiet, batchSize],
    );
    if (rows.length === 0) return settled;
    const last: RowDataPacket = rows[rows.length - 1]!;
    after = { startedAt: last['started_at'] as Date, jobId: String(last['job_id']) };
    const jobIds = rows.map((row) => String(row['job_id']));
    const states = await Promise.all(jobIds.map(async (jobId) => ({ jobId, job: await lookup(jobId) })));
    const gone: string[] = [];
    const unrecorded: string[] = [];
    const failed = new Map<string, string[]>();
    for (const { jobId, job } of states) {
      if (job.state === 'gone') gone.push(jobId);
      else if (job.state === 'failed') failed.set(job.reason, [...(failed.get(job.reason) ?? []), jobId]);
      else if (job.state === 'completed') {
        // A result the store refuses (a value it cannot hold) must not stop every later sweep: the run is failed
        // as abandoned instead, saying so. A row written since it was read (the job's id reused, a new start) is
        // neither: both writes check it is still as read.
        const recorded =
          isResultOf(job.result, jobId) &&
          (await new RunsRepository(pool as unknown as Pool)
            .finishRun(job.result, job.finishedAt ?? now, { unwrittenSince: quiet })
            .then(
              () => true,
              () => false,
            ));
        if (recorded) {
          settled.recorded += 1;
          if (!(await options.afterBatch(1))) return settled;
        } else unrecorded.push(jobId);
      }
    }
    const marks: [string[], string][] = [
      [gone, 'its job is no longer in Redis: the worker running it stopped without recording its end'],
      [unrecorded, 'its job completed, but its result could not be recorded'],
      ...[...failed].map(([reason, ids]): [string[], string] => [
        ids,
        `its job failed without recording its end: ${reason}`,
      ]),
    ];
    for (const [ids, reason] of marks) {
      if (ids.length === 0) continue;
      const [result] = await pool.query<ResultSetHeader>(
        `UPDATE agent_runs SET status = 'failed', stop_reason = 'error', error = ?, finished_at = ?
         WHERE job_id IN (?) AND status = 'running' AND updated_at < ?`,
        [JSON.stringify(abandonedError(reason)), now, ids, quiet],
      );
      settled.abandoned += result.affectedRows;
      if (!(await options.afterBatch(result.affectedRows))) return settled;
    }
    if (rows.length < batchSize) return settled;
  }
}

function isResultOf(value: unknown, jobId: string): value is AgentResult {
  if (typeof value !== 'object' || value === null) return false;
  const result = value as Partial<AgentResult>;
  return (
    result.jobId === jobId &&
    (result.status === 'succeeded' || result.status === 'stopped' || result.status === 'failed') &&
    typeof result.usage === 'object' &&
    result.usage !== null
  );
}
