// A job id can be used again: an idempotency key enqueued again once the first job and its result are gone (and
// with it a child agent's id, derived from its parent's). The effect ledger keys an effect by its call key (job id,
// step, position), so the new job's first email would find the earlier job's `done` row and send nothing. Before
// a job's first checkpoint (before any effect of its own can exist), the rows an earlier job of its id left are
// moved out of the way: kept for the record under a key no call has, never deleted.
import type { Pool, ResultSetHeader } from 'mysql2/promise';

/** Whether an id can name two jobs over time: BullMQ's own ids are an increasing counter; ours are chosen. */
export function reusableJobId(jobId: string): boolean {
  return !/^\d+$/.test(jobId);
}

/**
 * Moves the effect rows of `jobId` created before `createdAt` (the job's creation) under a `superseded:` key.
 * Idempotent; answers how many moved.
 */
export async function supersedeEarlierEffects(pool: Pool, jobId: string, createdAt: Date): Promise<number> {
  const [result] = await pool.execute<ResultSetHeader>(
    `UPDATE effect_ledger
        SET effect_key = CONCAT('superseded:', SHA2(CONCAT(effect_key, '@', DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f')), 256))
      WHERE job_id = ? AND created_at < ? AND effect_key NOT LIKE 'superseded:%'`,
    [jobId, createdAt],
  );
  return result.affectedRows;
}
