// send_email's ledger before migration 011 (`email_ledger`), which copied its rows into effect_ledger and is no
// longer written: its settled rows (`sent`, `dry_run`, `failed`) last changed before the steps' cutoff go, as the
// effect ledger's do. `pending` rows never go: they are what kept an email at most once, and a store that never
// ran 011's copy would still need them. A store without the table (dropped by hand) has nothing to sweep.
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { PruneBatches } from './prune-batches.js';

export const SETTLED_EMAIL_STATES = ['sent', 'dry_run', 'failed'] as const;

export async function pruneEmailLedger(options: PruneBatches, cutoff: Date): Promise<number> {
  const { pool, batchSize } = options;
  let deleted = 0;
  for (const state of SETTLED_EMAIL_STATES) {
    for (;;) {
      let rows: RowDataPacket[];
      try {
        // Through the (status, updated_at) key of migration 005.
        [rows] = await pool.query<RowDataPacket[]>(
          'SELECT call_key FROM email_ledger WHERE status = ? AND updated_at < ? ORDER BY updated_at LIMIT ?',
          [state, cutoff, batchSize],
        );
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ER_NO_SUCH_TABLE') return deleted;
        throw error;
      }
      if (rows.length === 0) break;
      const [result] = await pool.query<ResultSetHeader>(
        'DELETE FROM email_ledger WHERE call_key IN (?) AND status = ? AND updated_at < ?',
        [rows.map((row) => String(row['call_key'])), state, cutoff],
      );
      deleted += result.affectedRows;
      if (!(await options.afterBatch(result.affectedRows))) return deleted;
      if (rows.length < batchSize) break;
    }
  }
  return deleted;
}
