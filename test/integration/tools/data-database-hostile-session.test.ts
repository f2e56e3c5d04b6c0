// Red-team checks of the data database's pooled sessions (src/tools/data-session.ts) with the SQL guard
// switched off: each hostile statement is sent straight to DataDatabase.query on a pool of one connection, then
// a plain query runs, and the session it ran in is read behind the tools' back (every session variable, user
// variables, the open transaction, the default database) and from outside (named locks, table and row locks).
// Also: the limits hold after statements that tried to lift them, and the account writes nothing through
// sequences or an operator's DEFINER function behind a view. Seeds its own database af_test_hs_<random> and
// reader, and drops them at the end.
import { randomBytes } from 'node:crypto';
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDataDatabase, type DataDatabase } from '../../../src/tools/data-database.js';
import { isSessionNeutral } from '../../../src/tools/data-session.js';
import { checkSelectAst, checkSelectText } from '../../../src/tools/sql-guard.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';

const data = new SeededDataDatabase('hs');
const DATABASE = data.database;
const LOCK = `${DATABASE}_lock`;

let root: Pool;
let mariadb = false;
let setupError: unknown;

function requireServer(): void {
  if (setupError !== undefined) throw setupError;
}

beforeAll(async () => {
  try {
    await data.seed();
    root = data.rootPool({ database: DATABASE, multipleStatements: true });
    const [version] = await root.query<RowDataPacket[]>('SELECT VERSION() AS v');
    mariadb = /mariadb/i.test(String(version[0]?.['v']));
    await root.query('CREATE TABLE writes (a INT)');
    if (mariadb) {
      await root.query('CREATE SEQUENCE seq');
      // What an operator might install: SQL SECURITY DEFINER code the reader reaches through a view (it holds
      // no EXECUTE, so it cannot call the function itself).
      await root.query(
        'CREATE DEFINER = CURRENT_USER FUNCTION f_write() RETURNS INT MODIFIES SQL DATA SQL SECURITY DEFINER ' +
          'BEGIN INSERT INTO writes VALUES (1); RETURN 1; END',
      );
      await root.query(
        'CREATE DEFINER = CURRENT_USER FUNCTION f_next() RETURNS BIGINT SQL SECURITY DEFINER RETURN NEXTVAL(seq)',
      );
      await root.query(
        'CREATE DEFINER = CURRENT_USER SQL SECURITY DEFINER VIEW v_write AS SELECT f_write() AS w',
      );
      await root.query(
        'CREATE DEFINER = CURRENT_USER SQL SECURITY DEFINER VIEW v_next AS SELECT f_next() AS n',
      );
      await root.query(
        'CREATE DEFINER = CURRENT_USER FUNCTION f_session() RETURNS INT SQL SECURITY DEFINER ' +
          `BEGIN SET @leak = 7; RETURN GET_LOCK('${LOCK}', 0); END`,
      );
      await root.query(
        'CREATE DEFINER = CURRENT_USER SQL SECURITY DEFINER VIEW v_session AS SELECT f_session() AS s',
      );
    }
  } catch (error) {
    setupError = error;
  }
}, 60_000);

afterAll(async () => {
  if (!root) return;
  await data.drop(root);
  await root.end();
});

function openSingle(): Promise<DataDatabase> {
  return openDataDatabase(data.readerUrl(), { connectionLimit: 1 });
}

/** Session variables that change by themselves from one statement or connection to the next. */
const VOLATILE =
  /^(timestamp|rand_seed[12]|pseudo_thread_id|thread_id|last_insert_id|insert_id|identity|warning_count|error_count|last_gtid|gtid_seq_no|in_transaction|sql_log_bin|wsrep_.*)$/i;

/**
 * What the next user of the pool's only connection gets: a plain query through the tools runs first (it sets a
 * fresh connection up), then the session it ran in is read on that same connection, behind the tools' back.
 */
async function nextUsersSession(db: DataDatabase): Promise<Record<string, unknown>> {
  expect((await db.query('SELECT 1 AS one')).rows).toEqual([[1]]);
  const pool = (db as unknown as { pool: Pool }).pool;
  const connection: PoolConnection = await pool.getConnection();
  try {
    const state: Record<string, unknown> = {};
    const variables = mariadb
      ? 'SELECT VARIABLE_NAME AS n, VARIABLE_VALUE AS v FROM information_schema.SESSION_VARIABLES'
      : 'SELECT VARIABLE_NAME AS n, VARIABLE_VALUE AS v FROM performance_schema.session_variables';
    const [rows] = await connection.query<RowDataPacket[]>(variables);
    for (const row of rows) {
      const name = String(row['n']).toLowerCase();
      if (!VOLATILE.test(name)) state[name] = row['v'];
    }
    const open = mariadb ? '@@in_transaction' : '0';
    const users = mariadb ? '(SELECT COUNT(*) FROM information_schema.USER_VARIABLES)' : '0';
    const [extra] = await connection.query<RowDataPacket[]>(
      `SELECT ${open} AS open_tx, ${users} AS user_vars, DATABASE() AS db, LAST_INSERT_ID() AS last_id`,
    );
    return { ...state, ...extra[0] };
  } finally {
    connection.release();
  }
}

/** Root's view of what the reader may still hold: the named lock, and locks that would block a write. */
async function heldFromOutside(): Promise<{ namedLock: boolean; writeBlocked: boolean }> {
  const [free] = await root.query<RowDataPacket[]>('SELECT IS_FREE_LOCK(?) AS free', [LOCK]);
  const connection = await root.getConnection();
  try {
    await connection.query('SET SESSION lock_wait_timeout = 1, SESSION innodb_lock_wait_timeout = 1');
    const blocked = await connection
      .query('UPDATE orders SET status = status WHERE id = 1')
      .then(() => false)
      .catch(() => true);
    return { namedLock: Number(free[0]?.['free']) !== 1, writeBlocked: blocked };
  } finally {
    connection.release();
  }
}

/** Statements that try to leave something in their session for the next user (guard off). */
const HOSTILE = [
  'SET @leak = 42',
  'SELECT 7 INTO @leak',
  'SELECT @leak := 5',
  "SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT'",
  "SET time_zone = '+05:00'",
  'SET SESSION max_statement_time = 0',
  'SET SESSION sql_select_limit = DEFAULT',
  'SET SESSION tx_read_only = 0',
  'SET SESSION TRANSACTION READ WRITE',
  'SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED',
  'SET SESSION autocommit = 0',
  'SET NAMES latin1',
  'SET character_set_results = NULL',
  'SET SESSION group_concat_max_len = 4',
  'SET SESSION div_precision_increment = 0',
  'SET SESSION max_join_size = 1',
  'SET SESSION max_recursive_iterations = 1',
  "SET SESSION optimizer_switch = 'index_merge=off'",
  'SET STATEMENT max_statement_time = 0 FOR SELECT 1',
  'SELECT 1 /*! , @leak := 9 */',
  'SELECT 1 /*M! , @leak := 9 */',
  'SELECT /*+ SET_VAR(sql_select_limit = 1) */ 1',
  'START TRANSACTION',
  'START TRANSACTION READ WRITE',
  "XA START 'af_hs'",
  'SAVEPOINT s',
  'LOCK TABLES orders READ',
  `SELECT GET_LOCK('${LOCK}', 0)`,
  `SELECT id FROM orders WHERE id = 1 AND GET_LOCK('${LOCK}', 0)`,
  'HANDLER orders OPEN',
  "PREPARE leaked FROM 'SELECT 1'",
  'SELECT LAST_INSERT_ID(42)',
  'SELECT RAND(7)',
  'SELECT SQL_CALC_FOUND_ROWS id FROM orders LIMIT 1',
  'SELECT id FROM orders WHERE id = 1 LOCK IN SHARE MODE',
  'SELECT id FROM orders WHERE id = 1 FOR UPDATE',
  'SELECT NEXTVAL(seq)',
  'SELECT NEXT VALUE FOR seq',
  'SELECT SETVAL(seq, 100)',
  'SELECT * FROM v_next',
  'CREATE TEMPORARY TABLE tmp_leak (a INT)',
  'USE information_schema',
  "SELECT 1 INTO OUTFILE '/tmp/af_hs_never'",
  'SET ROLE NONE',
];

describe('a hostile statement, guard off, then the next query on the same pooled connection', () => {
  beforeEach(requireServer);

  it('finds the session as the set-up left it: every variable, no user variable, no transaction, no lock', async () => {
    const db = await openSingle();
    try {
      const baseline = await nextUsersSession(db);
      expect(baseline).toMatchObject({ open_tx: 0, user_vars: 0, db: DATABASE });
      expect(await heldFromOutside()).toEqual({ namedLock: false, writeBlocked: false });
      for (const sql of HOSTILE) {
        await db.query(sql).catch(() => undefined);
        expect(await nextUsersSession(db), sql).toEqual(baseline);
        expect(await heldFromOutside(), sql).toEqual({ namedLock: false, writeBlocked: false });
        // The handler and the prepared statement are gone with their session.
        await expect(db.query('EXECUTE leaked'), sql).rejects.toThrow();
        await expect(db.query('HANDLER orders READ FIRST'), sql).rejects.toThrow();
      }
      // The neutral ones among them kept their connection; whatever else could touch its session did not.
      expect(HOSTILE.filter(isSessionNeutral)).toEqual([
        'SELECT /*+ SET_VAR(sql_select_limit = 1) */ 1',
        'SELECT SQL_CALC_FOUND_ROWS id FROM orders LIMIT 1',
        'SELECT id FROM orders WHERE id = 1 LOCK IN SHARE MODE',
        'SELECT id FROM orders WHERE id = 1 FOR UPDATE',
        'SELECT * FROM v_next',
      ]);
    } finally {
      await db.close();
    }
  }, 120_000);

  it('stays bounded in time and rows after statements that tried to lift the limits', async () => {
    const db = await openSingle();
    try {
      const lifts = [
        'SET SESSION max_statement_time = 0',
        'SET SESSION sql_select_limit = DEFAULT',
        'SET STATEMENT max_statement_time = 0 FOR SELECT 1',
        'SELECT /*+ MAX_EXECUTION_TIME(0) */ 1',
      ];
      for (const lift of lifts) {
        await db.query(lift).catch(() => undefined);
        const started = Date.now();
        const slow = await db
          .query('SELECT SLEEP(5) AS s', { timeoutMs: 300 })
          .then((result) => result.rows)
          .catch((error: unknown) => error);
        // MariaDB stops the sleep at its limit (SLEEP returns 1), MySQL answers with a timeout error.
        if (!(slow instanceof Error)) expect(slow, lift).toEqual([[1]]);
        expect(Date.now() - started, lift).toBeLessThan(2_500);
        const rows = await db.query('SELECT id FROM orders ORDER BY id', { maxRows: 2 });
        expect(rows.rows, lift).toHaveLength(2);
        expect(rows.truncated, lift).toBe(true);
      }
    } finally {
      await db.close();
    }
  }, 60_000);
});

describe('read-only through code the reader reaches', () => {
  beforeEach(requireServer);

  it('writes nothing through sequences or a DEFINER function behind a view', async () => {
    if (!mariadb) return;
    const db = await openSingle();
    try {
      for (const sql of [
        'SELECT NEXTVAL(seq)',
        'SELECT NEXT VALUE FOR seq',
        'SELECT SETVAL(seq, 100)',
        'SELECT * FROM v_write',
        'SELECT * FROM v_next',
        'SELECT f_write()',
      ]) {
        await expect(db.query(sql), sql).rejects.toThrow();
      }
      const [written] = await root.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM writes');
      expect(Number(written[0]?.['n'])).toBe(0);
      const [sequence] = await root.query<RowDataPacket[]>('SELECT next_not_cached_value AS n FROM seq');
      expect(Number(sequence[0]?.['n'])).toBe(1);
    } finally {
      await db.close();
    }
  });
});

describe('documented limit: code the operator installed (docs/sql-safety.md#one-round-trip-per-statement)', () => {
  beforeEach(requireServer);

  // A view over a DEFINER function that sets a variable and takes a named lock: its text is neutral, so its
  // connection goes back to the pool holding both (before the one-round-trip rework, the reset on release
  // cleared them). Marked `fails` while the limit stands: it passes the day the gap is closed.
  it.fails('leaves nothing behind through a view over a DEFINER function', async () => {
    if (!mariadb) throw new Error('MariaDB only');
    const db = await openSingle();
    try {
      const baseline = await nextUsersSession(db);
      expect(isSessionNeutral('SELECT s FROM v_session')).toBe(true);
      await db.query('SELECT s FROM v_session');
      const after = await nextUsersSession(db);
      expect({ after, held: await heldFromOutside() }).toEqual({
        after: baseline,
        held: { namedLock: false, writeBlocked: false },
      });
    } finally {
      await db.close();
    }
  });
});

describe('another run on the same account (a guard-only rule)', () => {
  beforeEach(requireServer);

  it("sees and stops the other run's statements with the guard off; the guard refuses each way", async () => {
    const victim = await openSingle();
    const attacker = await openSingle();
    try {
      const secret = `secret_${randomBytes(4).toString('hex')}`;
      const running = victim
        .query(`SELECT SLEEP(3) AS s, '${secret}' AS t`, { timeoutMs: 5_000 })
        .catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // (Plain SHOW PROCESSLIST cuts the text at 100 characters, inside the SET STATEMENT prefix on MariaDB.)
      const probes = ['SHOW FULL PROCESSLIST', 'SELECT ID, INFO FROM information_schema.PROCESSLIST'];
      let victimId: unknown;
      for (const sql of probes) {
        const { rows } = await attacker.query(sql, { maxRows: 100 });
        const hit = rows.find((row) => row.some((value) => String(value).includes(secret)));
        expect(hit, sql).toBeDefined();
        victimId = hit?.[0];
        await expectRefusedByEachPass(sql);
      }
      const started = Date.now();
      await attacker.query(`KILL QUERY ${Number(victimId)}`);
      await expectRefusedByEachPass(`KILL QUERY ${Number(victimId)}`);
      const outcome = await running;
      // The victim's sleep was cut short by the other run, not by its own limit.
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(outcome instanceof Error || JSON.stringify(outcome).includes('"rows":[[1')).toBe(true);
    } finally {
      await victim.close();
      await attacker.close();
    }
  });
});

async function expectRefusedByEachPass(sql: string): Promise<void> {
  expect(checkSelectText(sql), sql).toBeDefined();
  expect((await checkSelectAst(sql)).ok, sql).toBe(false);
}
