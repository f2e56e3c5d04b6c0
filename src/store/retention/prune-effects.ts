// Settled rows of the effect ledger last changed before the cutoff: `done` (the effect happened and its value
// was recorded) and `failed` (it certainly did not happen). Never `pending` (an attempt may be between the effect
// and its record: the row is what keeps it at most once) nor `uncertain` (a lookup may still settle it, and
// reports list it). Nor the rows of a run still running: a resumed call must find its `done` record, or it would
// make the effect again. Selected through the (status, updated_at) key, deleted by primary key with the state
// checked again, so a `failed` row claimed again meanwhile is kept.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { PruneBatches } from './prune-batches.js';

export const SETTLED_STATES = ['done', 'failed'] as const;

export async function pruneSettledEffects(options: PruneBatches, cutoff: Date): Promise<number> {
  const { pool, batchSize } = options;
  let deleted = 0;
  for (const state of SETTLED_STATES) {
    for (;;) {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT e.effect_key FROM effect_ledger e
         WHERE e.status = ? AND e.updated_at < ?
           AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.job_id = e.job_id AND r.status = 'running')
         ORDER BY e.updated_at LIMIT ?`,
        [state, cutoff, batchSize],
      );
      if (rows.length === 0) break;
      const [result] = await pool.query<ResultSetHeader>(
        'DELETE FROM effect_ledger WHERE effect_key IN (?) AND status = ? AND updated_at < ?',
        [rows.map((row) => String(row['effect_key'])), state, cutoff],
      );
      deleted += result.affectedRows;
      if (!(await options.afterBatch(result.affectedRows))) return deleted;
      if (rows.length < batchSize) break;
    }
  }
  return deleted;
}
