// The one ledger of side effects: at most once per job and call (and the tool's own key), across retries and
// resumes, for every tool that is not readOnly (ToolContext.once, and send_email on the same rows). A call
// claims its row before the effect, marks it started just before the effect, and settles it after:
//   pending    claimed (`attempt` counts the claims); `started_at` set means the effect may have happened
//   done       it happened; `result` holds its JSON value, returned instead of running it again
//   failed     it certainly did not happen; the next claim takes the row again
//   uncertain  nothing could tell whether it happened: never run again by itself; a lookup may settle it later
// A row is marked started only while its attempt's claim still stands, so an attempt whose row was taken over
// cannot go on. Claims under a per-job cap are serialized by a named lock per job and tool, so parallel calls
// of one job cannot all pass the count before any of them is recorded.
import { createHash } from 'node:crypto';
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { StoreError } from '../kernel/errors.js';

export type EffectStatus = 'pending' | 'done' | 'failed' | 'uncertain';

export interface EffectRow {
  effectKey: string;
  jobId: string;
  tool: string;
  status: EffectStatus;
  /** The recorded value of a done effect (parsed JSON). */
  result: unknown;
  /** What a lookup asks the far side about; the effect key when the tool gave none. */
  ref: string;
  /** The tool's own JSON about the effect (send_email: recipient and subject). */
  detail: Record<string, unknown> | null;
  error: string | null;
  attempt: number;
  /** Null: the claiming attempt never started the effect. */
  startedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Milliseconds since the row last changed, by the database's clock (no skew with the worker's). */
  ageMs: number;
}

export interface EffectRowClaim {
  effectKey: string;
  jobId: string;
  tool: string;
  ref?: string;
  detail?: Record<string, unknown>;
  /**
   * The per-job cap of the tool: refused (`cap_reached`) when the job already has this many effects of the
   * tool done, pending or uncertain, not counting this one's own row.
   */
  maxPerJob?: number;
  /** Mark the row started with the claim (the effect follows at once). */
  started?: boolean;
}

export type EffectClaimResult =
  | { kind: 'new'; attempt: number }
  | { kind: 'done'; row: EffectRow }
  /** Pending or uncertain (row.status says which). */
  | { kind: 'pending'; row: EffectRow }
  | { kind: 'cap_reached'; count: number };

/** How a row's error begins when the ledger proved its effect did not happen and nobody made it since. */
export const NOT_DONE = 'not done';

const MAX_KEY_CHARS = 191;
const TEXT_MAX_CHARS = 10_000; // a TEXT column holds 64 KB, 4 bytes a character at worst
const REF_MAX_CHARS = 255;
const ER_DUP_ENTRY = 1062;

// The lock is server-wide, so its name includes the database; GET_LOCK names are limited to 64 characters,
// hence the hash. Computed in SQL so acquiring and releasing use the very same expression.
const LOCK_NAME = "CONCAT('af_effect:', LEFT(SHA2(CONCAT(DATABASE(), '/', ?, '/', ?), 256), 48))";

const rowSchema = z.object({
  effect_key: z.string(),
  job_id: z.string(),
  tool: z.string(),
  status: z.enum(['pending', 'done', 'failed', 'uncertain']),
  result: z.string().nullable(),
  ref: z.string().nullable(),
  detail: z.string().nullable(),
  error: z.string().nullable(),
  attempt: z.number().int(),
  started_at: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
  age_ms: z.union([z.number(), z.string().regex(/^-?\d+$/)]).transform(Number),
});

/** Effects of a job's tool that count against its cap (done, pending or uncertain), one effect key excepted. */
const COUNT_FOR_CAP = `SELECT COUNT(*) FROM effect_ledger
  WHERE job_id = ? AND tool = ? AND status IN ('pending', 'done', 'uncertain') AND effect_key <> ?`;

/** The effect's row (all nulls when there is none) and the count against its job's cap, in one statement. */
const READ_COUNTING = `SELECT e.*, TIMESTAMPDIFF(MICROSECOND, e.updated_at, NOW(3)) DIV 1000 AS age_ms,
    (${COUNT_FOR_CAP}) AS cap_count
  FROM (SELECT 1) AS one LEFT JOIN effect_ledger e ON e.effect_key = ?`;

const readCountingValues = (claim: EffectRowClaim) => [
  claim.jobId,
  claim.tool,
  claim.effectKey,
  claim.effectKey,
];

function readCountingOf(rows: RowDataPacket[] | undefined): { existing: EffectRow | null; count: number } {
  const raw = rows?.[0];
  const count = Number(raw?.['cap_count'] ?? 0);
  if (!raw || raw['effect_key'] === null) return { existing: null, count };
  return { existing: toRow(raw), count };
}

function refAndDetail(claim: EffectRowClaim): { ref: string; detail: string | null } {
  const ref = (claim.ref ?? claim.effectKey).slice(0, REF_MAX_CHARS);
  const detail = claim.detail === undefined ? null : JSON.stringify(claim.detail);
  if (detail !== null && detail.length > TEXT_MAX_CHARS) {
    throw new StoreError('effect_detail_too_large', `the detail of effect ${claim.effectKey} is too large`);
  }
  return { ref, detail };
}

/** The first claim's row: pending, started with the claim when the effect follows at once. */
function insertStatement(claim: EffectRowClaim): { sql: string; values: unknown[] } {
  const { ref, detail } = refAndDetail(claim);
  return {
    sql: `INSERT INTO effect_ledger (effect_key, job_id, tool, status, ref, detail, started_at)
      VALUES (?, ?, ?, 'pending', ?, ?, ${claim.started ? 'CURRENT_TIMESTAMP(3)' : 'NULL'})`,
    values: [claim.effectKey, claim.jobId.slice(0, 64), claim.tool.slice(0, 64), ref, detail],
  };
}

/** Every column, and the row's age by the server's clock. */
const SELECT_ROW =
  'SELECT *, TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(3)) DIV 1000 AS age_ms FROM effect_ledger';

/** The call key and the tool's key; hashed when too long for the column. */
export function effectKeyOf(callKey: string, key: string | undefined): string {
  const full = key === undefined ? callKey : `${callKey}#${key}`;
  if (full.length <= MAX_KEY_CHARS) return full;
  return `sha256:${createHash('sha256').update(full).digest('hex')}`;
}

export interface EffectLedgerOptions {
  /** Seconds a capped claim waits for its job's lock. Default 10. */
  lockTimeoutSeconds?: number;
  /**
   * The pool allows several statements in one query (store/pool.ts): a capped claim then takes two round trips
   * (the lock with the read, the insert with the unlock) instead of four.
   */
  multipleStatements?: boolean;
}

export class EffectLedger {
  constructor(
    private readonly pool: Pool,
    private readonly options: EffectLedgerOptions = {},
  ) {}

  /**
   * Claims the effect's row, atomically: the first claim inserts it as pending (`new`: go ahead); a later one
   * gets the row as it stands, except that a `failed` row is claimed again as `new`.
   */
  async claim(claim: EffectRowClaim): Promise<EffectClaimResult> {
    const connection = await this.pool.getConnection();
    const lock = { held: false };
    try {
      if (claim.maxPerJob === undefined) return await this.claimOn(connection, claim);
      if (this.options.multipleStatements) return await this.claimBatched(connection, claim, lock);
      await this.lockJob(connection, claim.jobId, claim.tool);
      lock.held = true;
      return await this.claimOn(connection, claim);
    } finally {
      await releaseConnection(connection, lock.held ? [claim.jobId, claim.tool] : undefined);
    }
  }

  /**
   * A capped claim in two round trips: the job's lock and then, in the same query, the row and the count (read
   * only once the lock is held; discarded when it was not); for a new row, the insert and then the unlock (the
   * row is committed before the next claim can count). Anything else goes on as the one-statement path does.
   */
  private async claimBatched(
    connection: PoolConnection,
    claim: EffectRowClaim,
    lock: { held: boolean },
  ): Promise<EffectClaimResult> {
    let sets: RowDataPacket[][];
    try {
      [sets] = await connection.query<RowDataPacket[][]>(
        `SELECT GET_LOCK(${LOCK_NAME}, ?) AS got; ${READ_COUNTING}`,
        [claim.jobId, claim.tool, this.lockTimeout, ...readCountingValues(claim)],
      );
    } catch (error) {
      // The lock may be held though the read after it failed: unlocked (or the connection closed) on release,
      // or it would stay with the pooled session and every other claim of the job would time out on it.
      lock.held = true;
      throw error;
    }
    if (Number(sets[0]?.[0]?.['got']) !== 1) throw this.lockBusy(claim.jobId, claim.tool);
    lock.held = true;
    const { existing, count } = readCountingOf(sets[1]);
    if (existing && existing.status !== 'failed') {
      return existing.status === 'done'
        ? { kind: 'done', row: existing }
        : { kind: 'pending', row: existing };
    }
    // A failed row is claimed again (an update that may race): the one-statement path, still locked.
    if (existing) return this.claimOn(connection, claim);
    if (count >= (claim.maxPerJob ?? Infinity)) return { kind: 'cap_reached', count };
    const insert = insertStatement(claim);
    try {
      await connection.query(`${insert.sql}; SELECT RELEASE_LOCK(${LOCK_NAME})`, [
        ...insert.values,
        claim.jobId,
        claim.tool,
      ]);
    } catch (error) {
      // A concurrent claim inserted it first (the unlock did not run): decide on its row, still locked.
      if ((error as { errno?: unknown }).errno === ER_DUP_ENTRY) return this.claimOn(connection, claim);
      throw error;
    }
    lock.held = false;
    return { kind: 'new', attempt: 1 };
  }

  /**
   * Just before the effect: true when this attempt's claim still stands (nobody took the row over), and from
   * now on the row says the effect may have happened.
   */
  async markStarted(effectKey: string, attempt: number): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE effect_ledger SET started_at = CURRENT_TIMESTAMP(3), updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status = 'pending' AND attempt = ? AND started_at IS NULL`,
      [effectKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /** It happened: the value is kept and given to every later attempt. */
  async markDone(effectKey: string, value: unknown): Promise<void> {
    await this.pool.query(
      `UPDATE effect_ledger SET status = 'done', result = ?, error = NULL, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ?`,
      [JSON.stringify(value ?? null), effectKey],
    );
  }

  /**
   * It certainly did not happen: the row may be claimed again. Never over a row another attempt has since settled
   * done (a late failure of a taken-over attempt must not free a made effect for a second one).
   */
  async markFailed(effectKey: string, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE effect_ledger SET status = 'failed', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status <> 'done'`,
      [clip(error), effectKey],
    );
  }

  /**
   * Takes a row from the attempt that holds it (pending or uncertain) when its effect certainly did not
   * happen: it becomes `failed`, which the next claim takes again. `unstartedOnly` also requires that the
   * attempt never marked it started. False when the row had moved on meanwhile.
   */
  async release(
    effectKey: string,
    attempt: number,
    why: string,
    options: { unstartedOnly?: boolean } = {},
  ): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE effect_ledger SET status = 'failed', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status IN ('pending', 'uncertain') AND attempt = ?
         ${options.unstartedOnly ? 'AND started_at IS NULL' : ''}`,
      [clip(why), effectKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /** Nothing could tell whether it happened: `uncertain`, never run again by itself. False when it moved on. */
  async markUncertain(effectKey: string, why: string): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE effect_ledger SET status = 'uncertain', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status IN ('pending', 'uncertain')`,
      [clip(why), effectKey],
    );
    return header.affectedRows === 1;
  }

  /** Keeps an error on a row that stays pending (the effect may have happened), for whoever investigates. */
  async noteError(effectKey: string, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE effect_ledger SET error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status = 'pending'`,
      [clip(error), effectKey],
    );
  }

  /** Effects of a job's tool that count against its cap: done, pending or uncertain. */
  async countForJob(jobId: string, tool: string, exceptEffectKey?: string): Promise<number> {
    return this.countOn(this.pool, jobId, tool, exceptEffectKey);
  }

  async get(effectKey: string): Promise<EffectRow | null> {
    return this.read(this.pool, effectKey);
  }

  async listForJob(jobId: string, tool?: string): Promise<EffectRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW} WHERE job_id = ? ${tool === undefined ? '' : 'AND tool = ?'}
       ORDER BY created_at, effect_key`,
      tool === undefined ? [jobId] : [jobId, tool],
    );
    return rows.map(toRow);
  }

  /**
   * Rows of these tools nobody is settling, unchanged for `olderThanMs` (no live attempt holds a row that
   * long): pending ones, then uncertain ones of the tools that have a lookup (only it can still settle those,
   * and many that it cannot must not crowd out the pending), oldest change first.
   */
  async listUnsettled(
    olderThanMs: number,
    options: {
      tools: readonly string[];
      uncertainOf?: readonly string[];
      limit?: number;
      /** Rows left out (the sweeper's backed-off lookups). */
      skip?: readonly string[];
    },
  ): Promise<EffectRow[]> {
    if (options.tools.length === 0) return [];
    const uncertainOf = options.uncertainOf?.length ? options.uncertainOf : [''];
    const skip = options.skip?.length ? options.skip : [''];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW}
       WHERE (status = 'pending' AND tool IN (?) OR status = 'uncertain' AND tool IN (?))
         AND updated_at <= NOW(3) - INTERVAL ? MICROSECOND AND effect_key NOT IN (?)
       ORDER BY status <> 'pending', updated_at LIMIT ?`,
      [options.tools, uncertainOf, Math.max(0, Math.floor(olderThanMs)) * 1000, skip, options.limit ?? 100],
    );
    return rows.map(toRow);
  }

  /** The rows of these jobs' tool whose effect may be missing: uncertain, pending, or failed after the fact. */
  async listDoubtful(
    jobIds: readonly string[],
    tool: string,
    notes: readonly string[],
  ): Promise<EffectRow[]> {
    if (jobIds.length === 0) return [];
    const noteMatch = notes.map(() => 'error LIKE ?').join(' OR ') || 'FALSE';
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_ROW}
       WHERE job_id IN (?) AND tool = ?
         AND (status IN ('pending', 'uncertain') OR (status = 'failed' AND (${noteMatch})))
       ORDER BY job_id, effect_key`,
      [jobIds, tool, ...notes.map((note) => `${note}%`)],
    );
    return rows.map(toRow);
  }

  private async claimOn(connection: PoolConnection, claim: EffectRowClaim): Promise<EffectClaimResult> {
    const { ref, detail } = refAndDetail(claim);
    const started = claim.started ? 'CURRENT_TIMESTAMP(3)' : 'NULL';
    // Rows are never deleted, so each round either decides or sees a concurrent claim's row; three rounds
    // cover an insert race followed by a failed row being claimed again by someone else.
    for (let round = 0; round < 3; round++) {
      // Under a cap, the row and the job's count in one round trip (both under the job's lock).
      const { existing, count } =
        claim.maxPerJob === undefined
          ? { existing: await this.read(connection, claim.effectKey), count: 0 }
          : await this.readCounting(connection, claim);
      if (existing && existing.status !== 'failed') {
        return existing.status === 'done'
          ? { kind: 'done', row: existing }
          : { kind: 'pending', row: existing };
      }
      if (claim.maxPerJob !== undefined && count >= claim.maxPerJob) return { kind: 'cap_reached', count };
      if (existing) {
        // It did not happen earlier: take the row back, for whatever this attempt does.
        const [header] = await connection.query<ResultSetHeader>(
          `UPDATE effect_ledger
           SET status = 'pending', ref = ?, detail = ?, result = NULL, error = NULL, attempt = attempt + 1,
             started_at = ${started}, updated_at = CURRENT_TIMESTAMP(3)
           WHERE effect_key = ? AND status = 'failed' AND attempt = ?`,
          [ref, detail, claim.effectKey, existing.attempt],
        );
        if (header.affectedRows === 1) return { kind: 'new', attempt: existing.attempt + 1 };
        continue;
      }
      try {
        const insert = insertStatement(claim);
        await connection.query(insert.sql, insert.values);
        return { kind: 'new', attempt: 1 };
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== ER_DUP_ENTRY) throw error;
      }
    }
    throw new StoreError(
      'effect_ledger_contended',
      `could not claim effect ${claim.effectKey}: too many races`,
      {
        retryable: true,
      },
    );
  }

  private async read(db: Pool | PoolConnection, effectKey: string): Promise<EffectRow | null> {
    const [rows] = await db.query<RowDataPacket[]>(`${SELECT_ROW} WHERE effect_key = ?`, [effectKey]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** The effect's row, if any, and how many effects of the job's tool count against its cap besides it. */
  private async readCounting(
    connection: PoolConnection,
    claim: EffectRowClaim,
  ): Promise<{ existing: EffectRow | null; count: number }> {
    const [rows] = await connection.query<RowDataPacket[]>(READ_COUNTING, readCountingValues(claim));
    return readCountingOf(rows);
  }

  private async countOn(
    db: Pool | PoolConnection,
    jobId: string,
    tool: string,
    exceptEffectKey?: string,
  ): Promise<number> {
    const [rows] = await db.query<RowDataPacket[]>(`SELECT (${COUNT_FOR_CAP}) AS n`, [
      jobId,
      tool,
      exceptEffectKey ?? '',
    ]);
    return Number(rows[0]?.['n'] ?? 0);
  }

  private get lockTimeout(): number {
    return this.options.lockTimeoutSeconds ?? 10;
  }

  private async lockJob(connection: PoolConnection, jobId: string, tool: string): Promise<void> {
    const [rows] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS got`, [
      jobId,
      tool,
      this.lockTimeout,
    ]);
    if (Number(rows[0]?.['got']) !== 1) throw this.lockBusy(jobId, tool);
  }

  private lockBusy(jobId: string, tool: string): StoreError {
    return new StoreError(
      'effect_ledger_lock_timeout',
      `${tool} lock of job ${jobId} busy for ${this.lockTimeout}s`,
      { retryable: true },
    );
  }
}

async function releaseConnection(
  connection: PoolConnection,
  lock: [string, string] | undefined,
): Promise<void> {
  if (lock === undefined) {
    connection.release();
    return;
  }
  try {
    await connection.query(`SELECT RELEASE_LOCK(${LOCK_NAME})`, lock);
    connection.release();
  } catch {
    // A lock belongs to its session: closing the connection is the sure way to free it.
    connection.destroy();
  }
}

function toRow(raw: RowDataPacket): EffectRow {
  const parsed = rowSchema.safeParse(raw);
  if (!parsed.success) {
    throw new StoreError('effect_ledger_row', `unexpected effect_ledger row: ${parsed.error.message}`);
  }
  const r = parsed.data;
  return {
    effectKey: r.effect_key,
    jobId: r.job_id,
    tool: r.tool,
    status: r.status,
    result: r.result === null ? null : parseJson(r.result),
    ref: r.ref ?? r.effect_key,
    detail: r.detail === null ? null : asObject(parseJson(r.detail)),
    error: r.error,
    attempt: r.attempt,
    startedAt: r.started_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ageMs: r.age_ms,
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new StoreError('effect_ledger_row', 'an effect_ledger row holds JSON that does not parse');
  }
}

function asObject(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function clip(text: string): string {
  return text.length > TEXT_MAX_CHARS ? text.slice(0, TEXT_MAX_CHARS) : text;
}
