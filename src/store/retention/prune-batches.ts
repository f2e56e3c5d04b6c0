// What every prune of the store sweeper shares: the pool, how many rows one statement may touch, and the hook
// called after each statement. The hook is where the sweep pauses (so no run of deletes holds InnoDB's locks
// and the purge thread back long enough to stall the fleet's writes), reports progress and stops when asked.
import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';

/** A pool or one connection: what the prunes run their statements on. */
export type Queryable = Pick<PoolConnection, 'query'>;

/**
 * The sweeper's session runs READ COMMITTED. Under MySQL's default REPEATABLE READ a DELETE by a list of primary
 * keys locks the gap after the last one too (the table's end, where every new step is inserted): measured, every
 * step write of the fleet waited for the sweeper's statement. READ COMMITTED takes no gap locks, so a statement
 * locks the rows it deletes and nothing else; the prunes' selects need no snapshot across statements.
 */
export const SWEEPER_SESSION = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

export interface PruneBatches {
  pool: Queryable;
  /** Rows one statement deletes at most. */
  batchSize: number;
  /** After each statement, with the rows it deleted; false stops the prune (lease lost, worker stopping). */
  afterBatch(deleted: number): Promise<boolean>;
}

/**
 * Deletes the rows a query finds, batchSize at a time, by primary key: `select` (its SQL ending with `LIMIT ?`,
 * given last) reads the keys without locking; the delete then locks those rows alone. A delete through a
 * secondary key would lock its gaps too, and a job id sorting next to an old one would wait for the sweeper.
 */
export async function deleteByKey(
  options: PruneBatches,
  table: string,
  key: string,
  select: string,
  params: unknown[],
): Promise<{ deleted: number; stopped: boolean }> {
  let deleted = 0;
  for (;;) {
    const [rows] = await options.pool.query<RowDataPacket[]>(select, [...params, options.batchSize]);
    if (rows.length === 0) return { deleted, stopped: false };
    const [result] = await options.pool.query<ResultSetHeader>(`DELETE FROM ${table} WHERE ${key} IN (?)`, [
      rows.map((row) => row[key] as unknown),
    ]);
    deleted += result.affectedRows;
    if (!(await options.afterBatch(result.affectedRows))) return { deleted, stopped: true };
    if (rows.length < options.batchSize) return { deleted, stopped: false };
  }
}
