// Step traces of runs that finished before the cutoff, deleted a window of primary keys at a time: each window
// is at most batchSize consecutive ids of agent_steps, read without locks; only the rows of finished-long-ago
// runs in it are deleted, by primary key, so a statement locks those rows and nothing the fleet writes now
// (new steps take ids past the window). Steps with no run row (a start never recorded) go once they are as old.
// Their runs are marked (steps_deleted_at) so the console says the steps are gone rather than showing none.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { PruneBatches } from './prune-batches.js';

export async function pruneSteps(options: PruneBatches, cutoff: Date): Promise<number> {
  const { pool, batchSize } = options;
  let after = 0;
  let deleted = 0;
  for (;;) {
    const [windows] = await pool.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n, MAX(id) AS hi, MAX(created_at) AS newest
       FROM (SELECT id, created_at FROM agent_steps WHERE id > ? ORDER BY id LIMIT ?) w`,
      [after, batchSize],
    );
    const window = windows[0];
    const rows = Number(window?.['n'] ?? 0);
    if (rows === 0) return deleted;
    const hi = Number(window?.['hi']);
    const [old] = await pool.query<RowDataPacket[]>(
      `SELECT s.id, s.job_id FROM agent_steps s LEFT JOIN agent_runs r ON r.job_id = s.job_id
       WHERE s.id > ? AND s.id <= ? AND (r.finished_at < ? OR (r.job_id IS NULL AND s.created_at < ?))`,
      [after, hi, cutoff, cutoff],
    );
    let removed = 0;
    if (old.length > 0) {
      // The age is asked again as the rows are deleted: a job id used again may have started a run since the
      // read, whose steps take the old rows' ids (a step is written over its row). The join reads those runs
      // with shared locks: in that race the journal's write and this one may deadlock, and InnoDB rolls one
      // back (the journal writes its batch again caller by caller; the sweep goes on at its next round).
      const [result] = await pool.query<ResultSetHeader>(
        `DELETE s FROM agent_steps s LEFT JOIN agent_runs r ON r.job_id = s.job_id
         WHERE s.id IN (?) AND (r.finished_at < ? OR (r.job_id IS NULL AND s.created_at < ?))`,
        [old.map((row) => Number(row['id'])), cutoff, cutoff],
      );
      removed = result.affectedRows;
      deleted += removed;
      // updated_at kept: the run itself did not change.
      await pool.query(
        `UPDATE agent_runs SET steps_deleted_at = NOW(3), updated_at = updated_at
         WHERE job_id IN (?) AND steps_deleted_at IS NULL AND finished_at < ?`,
        [[...new Set(old.map((row) => String(row['job_id'])))], cutoff],
      );
    }
    if (!(await options.afterBatch(removed))) return deleted;
    after = hi;
    // Ids grow with time: once a window reaches steps written after the cutoff, no later one holds older runs.
    const newest = window?.['newest'] as Date | null;
    if (rows < batchSize || (newest !== null && newest >= cutoff)) return deleted;
  }
}
