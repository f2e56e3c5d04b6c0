// Runs that finished before the cutoff, with what is theirs alone: their remaining steps and their approvals.
// Runs are taken batchSize at a time through the finished_at key; their steps and approvals go first, batchSize
// rows per statement and by primary key, then the runs: a sweep stopped midway leaves each run row in place until
// all of its pieces are gone. Each read of pieces checks their run's age again: a run started again meanwhile (its
// job id reused) keeps its steps and approvals, pending ones included. Pending effects of the run stay in the ledger: they are the at-most-once guarantee,
// whatever the age of the run.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { deleteByKey, type PruneBatches } from './prune-batches.js';

export interface PrunedRuns {
  runs: number;
  steps: number;
  approvals: number;
}

/** Batches for each table, so each statement is counted with the table it deleted from. */
export interface RunPruneBatches {
  runs: PruneBatches;
  steps: PruneBatches;
  approvals: PruneBatches;
}

export async function pruneRuns(batches: RunPruneBatches, cutoff: Date): Promise<PrunedRuns> {
  const { pool, batchSize } = batches.runs;
  const pruned: PrunedRuns = { runs: 0, steps: 0, approvals: 0 };
  for (;;) {
    const [rows] = await pool.query<RowDataPacket[]>(
      'SELECT job_id FROM agent_runs WHERE finished_at < ? ORDER BY finished_at LIMIT ?',
      [cutoff, batchSize],
    );
    if (rows.length === 0) return pruned;
    const jobIds = rows.map((row) => String(row['job_id']));
    const steps = await deleteByKey(
      batches.steps,
      'agent_steps',
      'id',
      `SELECT s.id FROM agent_steps s JOIN agent_runs r ON r.job_id = s.job_id
       WHERE s.job_id IN (?) AND r.finished_at < ? LIMIT ?`,
      [jobIds, cutoff],
    );
    pruned.steps += steps.deleted;
    if (steps.stopped) return pruned;
    const approvals = await deleteByKey(
      batches.approvals,
      'agent_approvals',
      'id',
      `SELECT a.id FROM agent_approvals a JOIN agent_runs r ON r.job_id = a.job_id
       WHERE a.job_id IN (?) AND r.finished_at < ? LIMIT ?`,
      [jobIds, cutoff],
    );
    pruned.approvals += approvals.deleted;
    if (approvals.stopped) return pruned;
    // By primary key, the age checked again: a run started again meanwhile is kept.
    const [result] = await pool.query<ResultSetHeader>(
      'DELETE FROM agent_runs WHERE job_id IN (?) AND finished_at < ?',
      [jobIds, cutoff],
    );
    pruned.runs += result.affectedRows;
    if (!(await batches.runs.afterBatch(result.affectedRows))) return pruned;
    if (rows.length < batchSize) return pruned;
  }
}
