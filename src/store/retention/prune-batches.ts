// What every prune of the store sweeper shares: the pool, how many rows one statement may touch, and the hook
// called after each statement. The hook is where the sweep pauses (so no run of deletes holds InnoDB's locks
// and the purge thread back long enough to stall the fleet's writes), reports progress and stops when asked.
import type { Pool, ResultSetHeader } from 'mysql2/promise';

export interface PruneBatches {
  pool: Pool;
  /** Rows one statement deletes at most. */
  batchSize: number;
  /** After each statement, with the rows it deleted; false stops the prune (lease lost, worker stopping). */
  afterBatch(deleted: number): Promise<boolean>;
}

/**
 * Runs `DELETE … LIMIT batchSize` (the SQL must end with `LIMIT ?`, given last) until a statement deletes
 * fewer: for deletes by a secondary key, where a range of primary keys is not at hand.
 */
export async function deleteInBatches(
  options: PruneBatches,
  sql: string,
  params: unknown[],
): Promise<{ deleted: number; stopped: boolean }> {
  let deleted = 0;
  for (;;) {
    const [result] = await options.pool.query<ResultSetHeader>(sql, [...params, options.batchSize]);
    deleted += result.affectedRows;
    if (result.affectedRows === 0) return { deleted, stopped: false };
    if (!(await options.afterBatch(result.affectedRows))) return { deleted, stopped: true };
    if (result.affectedRows < options.batchSize) return { deleted, stopped: false };
  }
}
