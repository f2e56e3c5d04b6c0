// The one ledger of side effects: at most once per job and call (and the tool's own key), across retries and
// resumes, for every tool that is not readOnly (ToolContext.once and send_email, both on effect-once.ts). A call
// claims its row before the effect, marks it started just before the effect, and settles it after:
//   pending    claimed (`attempt` counts the claims); `started_at` set means the effect may have happened
//   done       it happened; `result` holds its JSON value, returned instead of running it again
//   failed     it certainly did not happen; the next claim takes the row again
//   uncertain  nothing could tell whether it happened: never run again by itself; a lookup may settle it later
// A row is marked started only while its attempt's claim still stands, so an attempt whose row was taken over
// cannot go on. Claims under a per-job cap are serialized by a named lock per job and tool, so parallel calls
// of one job cannot all pass the count before any of them is recorded. On a pool that runs several statements
// in one query, the capped claims of one turn (a reply's parallel calls) go in one query, and the done records
// of the effects so claimed may leave together after the calls returned (docs/side-effects.md).
import { createHash } from 'node:crypto';
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { StoreError } from '../kernel/errors.js';
import { effectsInFlight } from '../kernel/effects-in-flight.js';
import { DoneRecords, type DoneRecord } from './effect-done-records.js';
import { SameTurnBatches, type Pending } from './same-turn-batches.js';

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
  return {
    sql: `INSERT INTO effect_ledger (effect_key, job_id, tool, status, ref, detail, started_at)
      VALUES (?, ?, ?, 'pending', ?, ?, ${claim.started ? 'CURRENT_TIMESTAMP(3)' : 'NULL'})`,
    values: insertValues(claim),
  };
}

/** The values of a new row: key, job, tool, ref and detail. */
function insertValues(claim: EffectRowClaim): unknown[] {
  const { ref, detail } = refAndDetail(claim);
  return [claim.effectKey, claim.jobId.slice(0, 64), claim.tool.slice(0, 64), ref, detail];
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
   * The pool allows several statements in one query (store/pool.ts): the capped claims of one job and tool made
   * in the same turn of the event loop (the calls of one model reply) then take ONE round trip together.
   */
  multipleStatements?: boolean;
  /**
   * `recordDone` does not hold the call: the records of effects claimed together leave in one write once all
   * of them settled (effect-done-records.ts). Off: `recordDone` writes at once, as `markDone` does.
   */
  deferDone?: boolean;
  /** How long a deferred record waits for the others claimed with it at most. Default 50 ms. */
  doneDelayMs?: number;
}

type PendingClaim = Pending<EffectRowClaim, EffectClaimResult>;

export class EffectLedger {
  private readonly claims = new SameTurnBatches<EffectRowClaim, EffectClaimResult>((group) =>
    this.claimTogether(group),
  );
  private readonly records: DoneRecords;

  constructor(
    private readonly pool: Pool,
    private readonly options: EffectLedgerOptions = {},
  ) {
    this.records = new DoneRecords((records) => this.writeDone(records), options.doneDelayMs ?? 50);
  }

  /** Whether `recordDone` leaves with the records of the effects claimed together (not awaited by the call). */
  get defersDone(): boolean {
    return this.options.deferDone === true;
  }

  /**
   * Claims the effect's row, atomically: the first claim inserts it as pending (`new`: go ahead); a later one
   * gets the row as it stands, except that a `failed` row is claimed again as `new`.
   */
  async claim(claim: EffectRowClaim): Promise<EffectClaimResult> {
    if (claim.maxPerJob === undefined || !this.options.multipleStatements) return this.claimAlone(claim);
    return this.claims.add(`${claim.jobId}\u0000${claim.tool}\u0000${claim.maxPerJob}`, claim);
  }

  private async claimAlone(claim: EffectRowClaim): Promise<EffectClaimResult> {
    const connection = await this.pool.getConnection();
    const lock = { held: false };
    try {
      if (claim.maxPerJob === undefined) return await this.claimOn(connection, claim);
      await this.lockJob(connection, claim.jobId, claim.tool);
      lock.held = true;
      return await this.claimOn(connection, claim);
    } finally {
      await releaseConnection(connection, lock.held ? [claim.jobId, claim.tool] : undefined);
    }
  }

  /**
   * The capped claims of one job and tool made in one turn, in ONE query: the job's lock; the job's count and
   * which of the keys have a row (one read); for each key, in the order the claims were made, an insert (the
   * key has no row) or the claim of a failed row again, either only while the lock is held and the count is
   * below the cap, each followed by the count going up by what it took; the rows of the keys; the unlock. Each
   * claim gets its own verdict: new (its insert or claim-again took), done or pending (its row), cap_reached
   * (neither took). The reads are plain reads, which lock nothing (an INSERT ... SELECT reading the table would
   * take shared locks on what it read). The claims are one transaction: a statement that fails midway (a
   * duplicate key, a lock wait timeout, a deadlock) leaves none of them made, rather than rows claimed, even
   * handed off, for calls that were told the query failed and will never make their effect; each claim is then
   * made again alone, so one bad claim fails only its own call.
   */
  private async claimTogether(group: readonly PendingClaim[]): Promise<void> {
    const { jobId, tool, maxPerJob } = group[0]!.request;
    const firstOf = new Map<string, EffectRowClaim>();
    for (const { request } of group)
      if (!firstOf.has(request.effectKey)) firstOf.set(request.effectKey, request);
    const claims = [...firstOf.values()];
    const keys = [...firstOf.keys()];
    const takes = 'WHERE @af_got = 1 AND @af_n < ?';
    const sql = [
      `SELECT GET_LOCK(${LOCK_NAME}, ?) INTO @af_got`,
      'START TRANSACTION',
      `SELECT COUNT(job_id = ? AND tool = ? AND status IN ('pending', 'done', 'uncertain') OR NULL),
         ${keys.map(() => 'COUNT(effect_key = ? OR NULL)').join(', ')}
       INTO @af_n, ${keys.map((_, i) => `@af_e${i}`).join(', ')}
       FROM effect_ledger WHERE @af_got = 1 AND (job_id = ? AND tool = ? OR effect_key IN (?))`,
      ...claims.flatMap((claim, i) => {
        const started = claim.started ? 'CURRENT_TIMESTAMP(3)' : 'NULL';
        return [
          `INSERT INTO effect_ledger (effect_key, job_id, tool, status, ref, detail, started_at)
           SELECT ?, ?, ?, 'pending', ?, ?, ${started} FROM DUAL ${takes} AND @af_e${i} = 0`,
          'SET @af_n = @af_n + ROW_COUNT()',
          // It did not happen earlier: take the row back, for whatever this attempt does.
          `UPDATE effect_ledger
           SET status = 'pending', ref = ?, detail = ?, result = NULL, error = NULL, attempt = attempt + 1,
             started_at = ${started}, updated_at = CURRENT_TIMESTAMP(3)
           ${takes} AND effect_key = ? AND status = 'failed'`,
          'SET @af_n = @af_n + ROW_COUNT()',
        ];
      }),
      `${SELECT_ROW} WHERE effect_key IN (?)`,
      'COMMIT',
      `SELECT @af_got AS got, @af_n AS n, RELEASE_LOCK(${LOCK_NAME}) AS released`,
    ].join(';\n');
    const values = [
      jobId,
      tool,
      this.lockTimeout,
      jobId,
      tool,
      ...keys,
      jobId,
      tool,
      keys,
      ...claims.flatMap((claim) => {
        const { ref, detail } = refAndDetail(claim);
        return [...insertValues(claim), maxPerJob, ref, detail, maxPerJob, claim.effectKey];
      }),
      keys,
      jobId,
      tool,
    ];
    const connection = await this.pool.getConnection();
    let sets: (RowDataPacket[] | ResultSetHeader)[];
    try {
      // Result sets and headers, one per statement.
      [sets] = (await connection.query<RowDataPacket[][]>(sql, values)) as unknown as [
        (RowDataPacket[] | ResultSetHeader)[],
      ];
      connection.release();
    } catch {
      // Failed midway: the session may hold the transaction and the lock. Both go (or the connection does), or
      // the pooled session would keep them and every other claim of the job would time out on the lock.
      await rollBackAndUnlock(connection, jobId, tool);
      for (const { request, resolve, reject } of group) this.claimAlone(request).then(resolve, reject);
      return;
    }
    const last = (sets[sets.length - 1] as RowDataPacket[])[0];
    if (Number(last?.['got']) !== 1) throw this.lockBusy(jobId, tool);
    const count = Number(last?.['n'] ?? 0);
    // Statements: the lock, the transaction, the read, four per claim, the rows, the commit, the unlock.
    const took = (i: number) =>
      (sets[3 + 4 * i] as ResultSetHeader).affectedRows === 1 ||
      (sets[5 + 4 * i] as ResultSetHeader).affectedRows === 1;
    const taken = new Set(claims.filter((_, i) => took(i)));
    const rows = new Map(
      (sets[3 + 4 * claims.length] as RowDataPacket[]).map((raw) => {
        const row = toRow(raw);
        return [row.effectKey, row];
      }),
    );
    if (this.options.deferDone && taken.size > 0) {
      this.records.together([...taken].map((claim) => claim.effectKey));
    }
    for (const { request, resolve } of group) {
      const row = rows.get(request.effectKey);
      if (taken.has(request)) resolve({ kind: 'new', attempt: row?.attempt ?? 1 });
      else if (row === undefined || row.status === 'failed') resolve({ kind: 'cap_reached', count });
      else resolve(row.status === 'done' ? { kind: 'done', row } : { kind: 'pending', row });
    }
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
    // Taken over: this attempt makes nothing, so it records nothing.
    if (header.affectedRows !== 1) this.records.settled(effectKey);
    return header.affectedRows === 1;
  }

  /** It happened: the value is kept and given to every later attempt. */
  async markDone(effectKey: string, value: unknown): Promise<void> {
    this.records.settled(effectKey);
    await this.writeDone([{ effectKey, value }]);
  }

  /**
   * It happened, just now, in this attempt: as markDone, but with `deferDone` the caller need not wait. The
   * record leaves with those of the effects claimed with it (one write for a reply's three emails) and is
   * tracked with the effects in flight, so a worker that shuts down writes it before closing its pools. If it
   * never lands (a crash, a failed write), the row stays pending and started: the tool's lookup settles it, or
   * it is reported uncertain, and it is never made again, as after a crash between an effect and an awaited
   * record. Resolves once the record is in.
   */
  recordDone(effectKey: string, value: unknown): Promise<void> {
    if (!this.options.deferDone) return this.markDone(effectKey, value);
    return effectsInFlight.track(this.records.record(effectKey, value));
  }

  /** Done records in one statement (unconditional, as each is true: the effect happened). */
  private async writeDone(records: readonly DoneRecord[]): Promise<void> {
    const cases = records.map(() => 'WHEN ? THEN ?').join(' ');
    await this.pool.query(
      `UPDATE effect_ledger
       SET status = 'done', result = CASE effect_key ${cases} END, error = NULL, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key IN (?)`,
      [
        ...records.flatMap((record) => [record.effectKey, JSON.stringify(record.value ?? null)]),
        records.map((record) => record.effectKey),
      ],
    );
  }

  /**
   * It certainly did not happen: the row may be claimed again. Never over a row another attempt has since settled
   * done (a late failure of a taken-over attempt must not free a made effect for a second one); given the
   * attempt, only while that attempt still holds the row (nor free the claim of the attempt that took it over,
   * whose effect may be under way).
   */
  async markFailed(effectKey: string, error: string, attempt?: number): Promise<void> {
    this.records.settled(effectKey);
    await this.pool.query(
      `UPDATE effect_ledger SET status = 'failed', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status <> 'done' ${attempt === undefined ? '' : 'AND attempt = ?'}`,
      attempt === undefined ? [clip(error), effectKey] : [clip(error), effectKey, attempt],
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
    this.records.settled(effectKey);
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE effect_ledger SET status = 'failed', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status IN ('pending', 'uncertain') AND attempt = ?
         ${options.unstartedOnly ? 'AND started_at IS NULL' : ''}`,
      [clip(why), effectKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /**
   * Nothing could tell whether it happened: `uncertain`, never run again by itself. False when it moved on. Given
   * the attempt the caller judged, only while that attempt still holds the row: a newer claim (a takeover whose
   * effect is under way) made uncertain would skip the wait of whoever meets it next, whose lookup could then
   * find the effect not done yet and make it a second time.
   */
  async markUncertain(effectKey: string, why: string, attempt?: number): Promise<boolean> {
    this.records.settled(effectKey);
    const [header] = await this.pool.query<ResultSetHeader>(
      `UPDATE effect_ledger SET status = 'uncertain', error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status IN ('pending', 'uncertain') ${attempt === undefined ? '' : 'AND attempt = ?'}`,
      attempt === undefined ? [clip(why), effectKey] : [clip(why), effectKey, attempt],
    );
    return header.affectedRows === 1;
  }

  /**
   * Keeps an error on a row that stays pending (the effect may have happened), for whoever investigates. Given
   * the attempt, only while that attempt still holds the row: a taken-over attempt's late error is not the newer
   * attempt's, and its write would also restart the newer claim's grace.
   */
  async noteError(effectKey: string, error: string, attempt?: number): Promise<void> {
    this.records.settled(effectKey);
    await this.pool.query(
      `UPDATE effect_ledger SET error = ?, updated_at = CURRENT_TIMESTAMP(3)
       WHERE effect_key = ? AND status = 'pending' ${attempt === undefined ? '' : 'AND attempt = ?'}`,
      attempt === undefined ? [clip(error), effectKey] : [clip(error), effectKey, attempt],
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

/** After a claims query failed midway: its transaction rolled back and the job's lock freed, or the session closed. */
async function rollBackAndUnlock(connection: PoolConnection, jobId: string, tool: string): Promise<void> {
  try {
    await connection.query(`ROLLBACK; SELECT RELEASE_LOCK(${LOCK_NAME})`, [jobId, tool]);
    connection.release();
  } catch {
    // The server rolls back and unlocks a session that closes.
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
