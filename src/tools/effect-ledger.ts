// At most once per job and call, for any tool with side effects (ToolContext.once). A call claims its row
// before the effect and records the effect's value after it; whoever finds the row learns what happened:
//   done     the effect ran; its recorded value is returned instead of running it again
//   pending  an attempt claimed it and stopped before recording: the effect may have happened, so it is not
//            run again (the call reports an uncertain effect)
// A throwing effect frees its row: a throw means nothing happened, and a later attempt may try again.
import { createHash } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { ToolError } from '../agent/errors.js';

const MAX_KEY_CHARS = 191;

/** What `once` throws when an earlier attempt left the effect pending. */
export class EffectUncertainError extends Error {
  constructor(readonly effectKey: string) {
    super(
      `an earlier attempt started this effect (${effectKey}) and stopped before recording its outcome: it is not run again`,
    );
  }
}

export interface EffectClaim {
  callKey: string;
  jobId: string;
  tool: string;
  /** The tool's own key, for a call with several effects. */
  key?: string;
}

export class EffectLedger {
  constructor(private readonly pool: Pool) {}

  async once<T>(claim: EffectClaim, effect: () => Promise<T>): Promise<T> {
    const effectKey = effectKeyOf(claim.callKey, claim.key);
    const claimed = await this.store(() =>
      this.pool.query<ResultSetHeader>(
        "INSERT IGNORE INTO effect_ledger (effect_key, job_id, tool, status) VALUES (?, ?, ?, 'pending')",
        [effectKey, claim.jobId.slice(0, 64), claim.tool.slice(0, 64)],
      ),
    );
    if (claimed[0].affectedRows === 0) {
      const [rows] = await this.store(() =>
        this.pool.query<RowDataPacket[]>('SELECT status, result FROM effect_ledger WHERE effect_key = ?', [
          effectKey,
        ]),
      );
      const row = rows[0] as { status: string; result: string | null } | undefined;
      if (row?.status === 'done') return (row.result === null ? null : JSON.parse(row.result)) as T;
      throw new EffectUncertainError(effectKey);
    }
    let value: T;
    try {
      value = await effect();
    } catch (error) {
      await this.pool
        .query('DELETE FROM effect_ledger WHERE effect_key = ?', [effectKey])
        .catch(() => undefined);
      throw error;
    }
    // If this write fails the row stays pending: the effect is then reported uncertain, never run twice.
    await this.store(() =>
      this.pool.query("UPDATE effect_ledger SET status = 'done', result = ? WHERE effect_key = ?", [
        JSON.stringify(value ?? null),
        effectKey,
      ]),
    );
    return value;
  }

  private async store<R>(query: () => Promise<R>): Promise<R> {
    try {
      return await query();
    } catch (error) {
      throw new ToolError('effect_ledger_unavailable', 'the effect ledger could not be read or written', {
        transient: true,
        cause: error,
      });
    }
  }
}

/** The call key and the tool's key; hashed when too long for the column. */
export function effectKeyOf(callKey: string, key: string | undefined): string {
  const full = key === undefined ? callKey : `${callKey}#${key}`;
  if (full.length <= MAX_KEY_CHARS) return full;
  return `sha256:${createHash('sha256').update(full).digest('hex')}`;
}
