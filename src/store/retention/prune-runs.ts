// Runs that finished before the cutoff, with what is theirs alone: their remaining steps and their approvals.
// Runs are taken batchSize at a time through the finished_at key; their steps and approvals are deleted
// batchSize rows per statement before the runs themselves, so a run row never outlives its pieces' deletion
// half-done (a sweep stopped midway leaves the run and the rest for the next). Pending effects of the run stay
// in the ledger: they are the at-most-once guarantee, whatever the age of the run.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { deleteInBatches, type PruneBatches } from './prune-batches.js';

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
    const steps = await deleteInBatches(
      batches.steps,
      'DELETE FROM agent_steps WHERE job_id IN (?) LIMIT ?',
      [jobIds],
    );
    pruned.steps += steps.deleted;
    if (steps.stopped) return pruned;
    const approvals = await deleteInBatches(
      batches.approvals,
      'DELETE FROM agent_approvals WHERE job_id IN (?) LIMIT ?',
      [jobIds],
    );
    pruned.approvals += approvals.deleted;
    if (approvals.stopped) return pruned;
    const [result] = await pool.query<ResultSetHeader>(
      'DELETE FROM agent_runs WHERE job_id IN (?) AND finished_at < ?',
      [jobIds, cutoff],
    );
    pruned.runs += result.affectedRows;
    if (!(await batches.runs.afterBatch(result.affectedRows))) return pruned;
    if (rows.length < batchSize) return pruned;
  }
}
