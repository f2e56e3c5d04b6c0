// Batches completed before the runs' cutoff (STORE_KEEP_RUNS_DAYS), with their reports: a batch completes after
// its last run ends, so its runs are gone or going in the same sweep. Taken batchSize at a time through the
// created_at key (a batch completes after it is created, so every one completed before the cutoff was created
// before it), deleted by primary key with the state and age checked again: the report first, then the batch, so a
// sweep stopped midway leaves a batch without its last report, never a report without its batch for long.
// A batch still `running` stays, whatever its age. Reports whose batch row is gone (written by `npm run report`
// for a batch deleted by hand) go once they were last written before the cutoff.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { deleteByKey, type PruneBatches } from './prune-batches.js';

export interface PrunedBatches {
  batches: number;
  reports: number;
}

export interface BatchPruneBatches {
  batches: PruneBatches;
  reports: PruneBatches;
}

export async function pruneBatchRows(batches: BatchPruneBatches, cutoff: Date): Promise<PrunedBatches> {
  const { pool, batchSize } = batches.batches;
  const pruned: PrunedBatches = { batches: 0, reports: 0 };
  for (;;) {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT batch_id FROM agent_batches
       WHERE created_at < ? AND state = 'completed' AND completed_at < ?
       ORDER BY created_at LIMIT ?`,
      [cutoff, cutoff, batchSize],
    );
    if (rows.length === 0) break;
    const batchIds = rows.map((row) => String(row['batch_id']));
    const [reports] = await pool.query<ResultSetHeader>('DELETE FROM batch_reports WHERE batch_id IN (?)', [
      batchIds,
    ]);
    pruned.reports += reports.affectedRows;
    if (!(await batches.reports.afterBatch(reports.affectedRows))) return pruned;
    const [result] = await pool.query<ResultSetHeader>(
      "DELETE FROM agent_batches WHERE batch_id IN (?) AND state = 'completed' AND completed_at < ?",
      [batchIds, cutoff],
    );
    pruned.batches += result.affectedRows;
    if (!(await batches.batches.afterBatch(result.affectedRows))) return pruned;
    if (rows.length < batchSize) break;
  }
  const orphans = await deleteByKey(
    batches.reports,
    'batch_reports',
    'batch_id',
    `SELECT r.batch_id FROM batch_reports r
     WHERE r.updated_at < ? AND NOT EXISTS (SELECT 1 FROM agent_batches b WHERE b.batch_id = r.batch_id)
     LIMIT ?`,
    [cutoff],
  );
  pruned.reports += orphans.deleted;
  return pruned;
}
