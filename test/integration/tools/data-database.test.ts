// The data database's own defences, with the SQL guard switched off (db.query is called directly): the
// read-only account, the read-only session, the limits and the error mapping, against the real MariaDB/MySQL
// of MYSQL_URL's server. This file seeds its own database af_test_data_<random> with its own reader
// af_r_<random> (plus af_x_<random>, an account given extra rights case by case) and drops them all at the
// end. With no server every test fails; none is skipped.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createConnection, createPool } from 'mysql2/promise';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, ToolError, StoreError } from '../../../src/kernel/errors.js';
import { generateSalesData } from '../../../src/demo/sales-data.js';
import { seedDemoDatabase } from '../../../src/demo/seed-demo-database.js';
import { quoteIdentifier } from '../../../src/store/pool.js';
import { openDataDatabase, type DataDatabase } from '../../../src/tools/data-database.js';
import { grantLineProblem } from '../../../src/tools/data-grants.js';
import { join } from 'node:path';
import { CORPORA_DIR } from '../../support/repo-paths.js';

const SERVER = new URL(process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet');
const HOST = SERVER.hostname;
const PORT = Number(SERVER.port || 3306);
const ROOT_USER = decodeURIComponent(SERVER.username) || 'root';
const ROOT_PASSWORD = decodeURIComponent(SERVER.password);
const SUFFIX = randomBytes(4).toString('hex');
const DATABASE = `af_test_data_${SUFFIX}`;
const READER = `af_r_${SUFFIX}`;
const READER_PASSWORD = `pw_${randomBytes(8).toString('hex')}`;
const OTHER = `af_x_${SUFFIX}`;
const OTHER_PASSWORD = `px_${randomBytes(8).toString('hex')}`;
const ROLE = `af_role_${SUFFIX}`;
const OUTFILE = `/tmp/af_outfile_${SUFFIX}`;
const DB = quoteIdentifier(DATABASE);
const TABLES = ['customers', 'products', 'orders', 'order_items'];

const data = generateSalesData();

function dataUrl(user: string, password: string, port = PORT, database = DATABASE): string {
  return `mysql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${HOST}:${port}/${database}`;
}

let root: Pool;
let db: DataDatabase;
let setupError: unknown;

/** A failed beforeAll only marks tests skipped; rethrown per test, a missing server is a failure. */
function requireServer(): void {
  if (setupError !== undefined) throw setupError;
}

beforeAll(async () => {
  try {
    await setUp();
  } catch (error) {
    setupError = error;
  }
});

async function setUp(): Promise<void> {
  await seedDemoDatabase({
    adminUrl: SERVER.href,
    database: DATABASE,
    readerUser: READER,
    readerPassword: READER_PASSWORD,
  });
  root = createPool({ host: HOST, port: PORT, user: ROOT_USER, password: ROOT_PASSWORD, connectionLimit: 3 });
  await root.query('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?', [OTHER, '%', OTHER_PASSWORD]);
  await root.query(`CREATE PROCEDURE ${DB}.af_noop() SELECT 1`);
  db = await openDataDatabase(dataUrl(READER, READER_PASSWORD), { connectionLimit: 4 });
}

afterAll(async () => {
  // A query the tests had killed may still be winding down on the server: closing waits for it at most a while,
  // and what is left of the test's sessions is killed, since their locks would hold the DROP below.
  await Promise.race([db?.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
  if (setupError !== undefined) {
    await root?.end();
    return;
  }
  const [sessions] = await root.query<RowDataPacket[]>(
    'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER IN (?, ?)',
    [READER, OTHER],
  );
  for (const session of sessions) await root.query('KILL ?', [Number(session['id'])]).catch(() => undefined);
  await root.query('SET SESSION lock_wait_timeout = 20');
  await root?.query(`DROP DATABASE IF EXISTS ${DB}`);
  await root?.query('DROP USER IF EXISTS ?@?', [READER, '%']);
  await root?.query('DROP USER IF EXISTS ?@?', [OTHER, '%']);
  await root?.query(`DROP ROLE IF EXISTS ${quoteIdentifier(ROLE)}`).catch(() => undefined);
  await root?.end();
});

/** What a write would change: exact checksums and counts of the four tables, the table list, and more. */
async function snapshot(): Promise<unknown> {
  const [checksums] = await root.query<RowDataPacket[]>(
    `CHECKSUM TABLE ${TABLES.map((t) => `${DB}.${t}`).join(', ')} EXTENDED`,
  );
  const counts: Record<string, number> = {};
  for (const table of TABLES) {
    const [rows] = await root.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${DB}.${table}`);
    counts[table] = Number(rows[0]?.['n']);
  }
  const [tables] = await root.query<RowDataPacket[]>(
    'SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY 1',
    [DATABASE],
  );
  const [evil] = await root.query<RowDataPacket[]>(
    "SELECT (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('evil', 'sales')) AS dbs, " +
      "(SELECT COUNT(*) FROM mysql.user WHERE User = 'evil') AS users, @@GLOBAL.general_log AS general_log",
  );
  const [grants] = await root.query<RowDataPacket[]>({ sql: 'SHOW GRANTS FOR ?@?', rowsAsArray: true }, [
    READER,
    '%',
  ]);
  return {
    checksums: checksums.map((row) => [row['Table'], String(row['Checksum'])]),
    counts,
    tables: tables.map((row) => row['t']),
    evil: evil[0],
    grants: (grants as unknown as string[][]).map((row) => row[0]),
  };
}

/** Existence and modification time of files hostile SQL tries to write. */
async function files(): Promise<Record<string, number | null>> {
  const paths = [OUTFILE, '/tmp/x', '/tmp/customers.csv', '/var/lib/mysql-files/x', '/var/www/shell.php'];
  const result: Record<string, number | null> = {};
  for (const path of paths)
    result[path] = await stat(path).then(
      (s) => s.mtimeMs,
      () => null,
    );
  return result;
}

async function canLogIn(user: string, password: string): Promise<boolean> {
  try {
    const connection = await createConnection({ host: HOST, port: PORT, user, password });
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

/** Statements of `user` still on the server, including killed ones stuck writing a result nobody reads. */
async function runningQueries(user: string, like: string): Promise<number> {
  const [rows] = await root.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND IN ('Query', 'Killed') AND INFO LIKE ?",
    [user, like],
  );
  return Number(rows[0]?.['n']);
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

async function failure(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw new Error(`expected a ToolError, got ${String(error)}`, { cause: error });
  }
  throw new Error('expected the query to fail');
}

function corpus(): string[] {
  const lines = readFileSync(join(CORPORA_DIR, 'hostile-sql.txt'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const multiline = JSON.parse(
    readFileSync(join(CORPORA_DIR, 'hostile-sql-multiline.json'), 'utf8'),
  ) as string[];
  return [...lines, ...multiline];
}

describe('grantLineProblem', () => {
  const cases: [string, RegExp | undefined][] = [
    ["GRANT USAGE ON *.* TO `r`@`%` IDENTIFIED BY PASSWORD '*ABC'", undefined],
    ['GRANT SELECT ON `shop`.* TO `r`@`%`', undefined],
    ['GRANT SELECT, SHOW VIEW ON `shop`.`orders` TO `r`@`%`', undefined],
    ['GRANT SELECT (`id`, `na,me`) ON `shop`.`t` TO `r`@`%`', undefined],
    ['REVOKE INSERT ON `mysql`.* FROM `r`@`%`', undefined],
    ['SET DEFAULT ROLE `x` FOR `r`@`%`', undefined],
    ['GRANT SELECT ON `shop`.* TO PUBLIC', undefined],
    ['GRANT SELECT, INSERT ON `shop`.* TO `r`@`%`', /^INSERT on `shop`\.\*$/],
    ['GRANT SELECT (`id`), INSERT (`name`) ON `shop`.`t` TO `r`@`%`', /^INSERT on `shop`\.`t`$/],
    ['GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `r`@`%`', /^EXECUTE on PROCEDURE/],
    ['GRANT FILE ON *.* TO `r`@`%`', /^FILE on \*\.\*$/],
    ['GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION', /^ALL PRIVILEGES/],
    ["GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION", /^PROXY/],
    ['GRANT SELECT ON *.* TO `r`@`%`', /every database/],
    ['GRANT SELECT ON `mysql`.`user` TO `r`@`%`', /mysql schema/],
    ['GRANT SELECT ON `shop`.* TO `r`@`%` WITH GRANT OPTION', /^GRANT OPTION/],
    // MySQL 8 forms: dynamic privileges without spaces, roles as `name`@`host`.
    ['GRANT BACKUP_ADMIN,BINLOG_ADMIN ON *.* TO `root`@`localhost`', /^BACKUP_ADMIN/],
    ['GRANT `reader_role`@`%` TO `r`@`%`', /role `reader_role`@`%`/],
    ['GRANT `role1` TO `r`@`%`', /role/],
    // A quoted name holding " ON " or " TO " must not fool the parser.
    ['GRANT SELECT ON `a ON b`.`c TO d` TO `r`@`%`', undefined],
    ['something else entirely', /unrecognised/],
  ];
  it.each(cases)('%s', (line, expected) => {
    const problem = grantLineProblem(line);
    if (expected === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(expected);
  });
});

describe('openDataDatabase and assertReadOnly', () => {
  beforeEach(requireServer);

  it('detects the server flavour from VERSION()', async () => {
    const [rows] = await root.query<RowDataPacket[]>('SELECT VERSION() AS v');
    const version = String(rows[0]?.['v']);
    expect(db.serverVersion).toBe(version);
    expect(db.flavour).toBe(/mariadb/i.test(version) ? 'mariadb' : 'mysql');
    expect(db.database).toBe(DATABASE);
  });

  it('accepts the seeded reader', async () => {
    await expect(db.assertReadOnly()).resolves.toBeUndefined();
  });

  it('refuses root, naming DATA_MYSQL_URL', async () => {
    const error = await openDataDatabase(dataUrl(ROOT_USER, ROOT_PASSWORD)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^DATA_MYSQL_URL=mysql:\/\//);
    expect((error as Error).message).toMatch(/root|ALL PRIVILEGES/);
  });

  const extraGrants: [string, string, RegExp][] = [
    ['database INSERT', `GRANT INSERT ON ${DB}.* TO ?@?`, /INSERT on `af_test_data_\w+`\.\*/],
    ['global FILE', 'GRANT FILE ON *.* TO ?@?', /FILE on \*\.\*/],
    ['table UPDATE', `GRANT UPDATE ON ${DB}.orders TO ?@?`, /UPDATE on `af_test_data_\w+`\.`orders`/],
    ['column INSERT', `GRANT INSERT (status) ON ${DB}.orders TO ?@?`, /INSERT on/],
    ['routine EXECUTE', `GRANT EXECUTE ON PROCEDURE ${DB}.af_noop TO ?@?`, /EXECUTE on PROCEDURE/],
    ['global SELECT', 'GRANT SELECT ON *.* TO ?@?', /SELECT on \*\.\* \(every database/],
    ['GRANT OPTION', `GRANT SELECT ON ${DB}.* TO ?@? WITH GRANT OPTION`, /GRANT OPTION/],
    ['a role', `GRANT ${quoteIdentifier(ROLE)} TO ?@?`, /role/],
  ];

  it('accepts the extra account with SELECT alone (the control case)', async () => {
    await resetOther();
    const other = await openDataDatabase(dataUrl(OTHER, OTHER_PASSWORD));
    await other.close();
  });

  it.each(extraGrants)('refuses an account with %s', async (_label, grant, expected) => {
    await resetOther();
    if (grant.includes(ROLE)) {
      await root.query(`CREATE ROLE IF NOT EXISTS ${quoteIdentifier(ROLE)}`);
      await root.query(`GRANT INSERT ON ${DB}.* TO ${quoteIdentifier(ROLE)}`);
    }
    await root.query(grant, [OTHER, '%']);
    const error = await openDataDatabase(dataUrl(OTHER, OTHER_PASSWORD)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/^DATA_MYSQL_URL=mysql:\/\/af_x_\w+:\*\*\*@/);
    expect(message).toMatch(expected);
    expect(message).not.toContain(OTHER_PASSWORD);
  });

  async function resetOther(): Promise<void> {
    await root.query('REVOKE ALL PRIVILEGES, GRANT OPTION FROM ?@?', [OTHER, '%']);
    await root.query(`REVOKE ${quoteIdentifier(ROLE)} FROM ?@?`, [OTHER, '%']).catch(() => undefined);
    await root.query(`GRANT SELECT ON ${DB}.* TO ?@?`, [OTHER, '%']);
  }

  it('names DATA_MYSQL_URL and hides the password when it cannot connect', async () => {
    const secret = `wrong_${SUFFIX}_secret`;
    const denied = await openDataDatabase(dataUrl(READER, secret)).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(ConfigError);
    expect((denied as Error).message).toMatch(/^DATA_MYSQL_URL=mysql:\/\/af_r_\w+:\*\*\*@/);
    expect((denied as Error).message).not.toContain(secret);

    const bad = await openDataDatabase('http://nowhere').catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ConfigError);
    expect((bad as Error).message).toMatch(/^DATA_MYSQL_URL/);

    const unreachable = await openDataDatabase(dataUrl(READER, secret, 1)).catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(StoreError);
    expect((unreachable as StoreError).retryable).toBe(true);
    expect((unreachable as Error).message).toMatch(/^DATA_MYSQL_URL=/);
    expect((unreachable as Error).message).not.toContain(secret);
  });
});

describe('query with the SQL guard switched off', () => {
  beforeEach(requireServer);

  it('writes nothing, reads no file and stops sleeps: each hostile statement', async () => {
    const before = await snapshot();
    const filesBefore = await files();
    const mustFail = [
      "INSERT INTO orders (id, customer_id, order_date, status, total) VALUES (999999, 1, '2024-01-01', 'completed', 1)",
      'UPDATE orders SET total = 0',
      'DELETE FROM order_items',
      'DROP TABLE order_items',
      `CREATE TABLE evil_${SUFFIX} (a INT)`,
      'CREATE TEMPORARY TABLE t AS SELECT 1',
      'TRUNCATE TABLE orders',
      "SET PASSWORD = PASSWORD('hacked')",
      `SELECT * FROM customers INTO OUTFILE '${OUTFILE}'`,
      `SELECT 'x' INTO DUMPFILE '${OUTFILE}'`,
      "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE customers",
      'LOCK TABLES orders WRITE',
      'USE mysql',
    ];
    for (const sql of mustFail) {
      const error = await failure(db.query(sql));
      expect(error.code, sql).toBe('sql_error');
      expect(error.message, sql).not.toContain(READER_PASSWORD);
    }

    // LOAD_FILE needs FILE: NULL for the reader, whatever the server could read itself.
    const loaded = await db.query("SELECT LOAD_FILE('/etc/passwd') AS f");
    expect(loaded.rows).toEqual([[null]]);
    expect(JSON.stringify(loaded)).not.toMatch(/root:/);

    // SLEEP is stopped by the server-side limit (MariaDB: an error; MySQL: SLEEP returns 1), well before the
    // client's own timeout (limit + 1 s) would fire.
    const started = Date.now();
    const slept = await db.query('SELECT SLEEP(10) AS s', { timeoutMs: 1_000 }).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1_800);
    if (slept instanceof ToolError) {
      expect(slept.code).toBe('query_timeout');
      expect(slept.message).toMatch(/longer than 1 s/);
    } else {
      expect((slept as { rows: unknown[][] }).rows).toEqual([[1]]);
    }

    expect(await snapshot()).toEqual(before);
    expect(await files()).toEqual(filesBefore);
    expect(await canLogIn(READER, READER_PASSWORD)).toBe(true);
    expect(await canLogIn(READER, 'hacked')).toBe(false);
  });

  it('stops a query that lifts its own server-side limit with the client timeout and KILL QUERY', async () => {
    if (db.flavour !== 'mariadb') return; // SET STATEMENT is MariaDB syntax; MySQL has MAX_EXECUTION_TIME hints.
    const started = Date.now();
    const error = await failure(
      db.query('SET STATEMENT max_statement_time=0 FOR SELECT SLEEP(20)', { timeoutMs: 300 }),
    );
    expect(error.code).toBe('query_timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await eventually(async () => (await runningQueries(READER, '%SLEEP(20)%')) === 0)).toBe(true);
  });

  it('refuses FOR UPDATE, and holds a shared or a named lock no longer than the query', async () => {
    // FOR UPDATE: MariaDB refuses it in the read-only transaction, MySQL without UPDATE/DELETE/LOCK TABLES.
    const forUpdate = await failure(db.query('SELECT id FROM orders WHERE id = 1.0FOR UPDATE'));
    expect(forUpdate.code).toBe('sql_error');

    // What only the guard refuses (docs/sql-safety.md) runs here, but its lock ends with the query: the
    // transaction is rolled back at once, and a statement naming GET_LOCK has its connection dropped after it,
    // which frees the named lock (src/tools/data-session.ts).
    const shared = await db.query('SELECT id FROM orders WHERE id = 1.0LOCK IN SHARE MODE');
    expect(shared.rows).toEqual([[1]]);
    const writer = await root.getConnection();
    try {
      await writer.query('SET SESSION innodb_lock_wait_timeout = 1');
      await writer.query('START TRANSACTION');
      await writer.query(`UPDATE ${DB}.orders SET total = total WHERE id = 1`);
      await writer.query('ROLLBACK');
    } finally {
      writer.release();
    }

    const lock = `af_lock_${SUFFIX}`;
    const named = await db.query(`SELECT GET_LOCK('${lock}', 0) AS got`);
    expect(named.rows).toEqual([[1]]);
    // The connection is closed just before the query returns: give the server a moment to notice.
    const isFree = async () => {
      const [rows] = await root.query<RowDataPacket[]>('SELECT IS_FREE_LOCK(?) AS free', [lock]);
      return Number(rows[0]?.['free']) === 1;
    };
    expect(await eventually(isFree, 1_000)).toBe(true);
  });

  it(
    'leaves the data unchanged after every statement of the hostile corpus',
    { timeout: 120_000 },
    async () => {
      const before = await snapshot();
      const filesBefore = await files();
      const statements = corpus();
      const outcomes: { sql: string; ok: boolean; code?: string }[] = [];
      // Four at a time: the corpus holds dozens of sleeps, each stopped by the 300 ms limit.
      const queue = [...statements];
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let sql = queue.shift(); sql !== undefined; sql = queue.shift()) {
            try {
              await db.query(sql, { timeoutMs: 300, maxRows: 3 });
              outcomes.push({ sql, ok: true });
            } catch (error) {
              // Every failure is a ToolError the runner can turn into an observation, never anything else.
              expect(error, sql).toBeInstanceOf(ToolError);
              outcomes.push({ sql, ok: false, code: (error as ToolError).code });
            }
          }
        }),
      );
      expect(outcomes).toHaveLength(statements.length);
      expect(outcomes.filter((o) => !o.ok).length).toBeGreaterThan(statements.length / 2);

      expect(await snapshot()).toEqual(before);
      expect(await files()).toEqual(filesBefore);
      expect(await canLogIn(READER, READER_PASSWORD)).toBe(true);
      expect(await canLogIn(ROOT_USER, ROOT_PASSWORD)).toBe(true);
      expect(await db.query('SELECT COUNT(*) FROM orders')).toMatchObject({ rows: [[data.orders.length]] });
    },
  );
});

describe('query limits', () => {
  beforeEach(requireServer);

  it('returns at most maxRows rows in the query order, with the total count when it is cheap', async () => {
    const result = await db.query('SELECT id, total FROM orders ORDER BY total DESC, id', { maxRows: 5 });
    const expected = [...data.orders]
      .sort((a, b) => Number(b.total) - Number(a.total) || a.id - b.id)
      .slice(0, 5)
      .map((o) => [o.id, o.total]);
    expect(result).toEqual({
      columns: ['id', 'total'],
      rows: expected,
      rowCount: data.orders.length,
      truncated: true,
    });

    const small = await db.query('SELECT COUNT(*) AS n FROM orders;');
    expect(small).toEqual({ columns: ['n'], rows: [[data.orders.length]], rowCount: 1, truncated: false });

    const exact = await db.query('SELECT id FROM products ORDER BY id', { maxRows: 40 });
    expect(exact.truncated).toBe(false);
    expect(exact.rowCount).toBe(40);
  });

  it('keeps a larger LIMIT of the query correct while stopping the transfer early', async () => {
    const result = await db.query('SELECT id FROM orders ORDER BY id LIMIT 1000', { maxRows: 3 });
    expect(result).toEqual({ columns: ['id'], rows: [[1], [2], [3]], rowCount: 1000, truncated: true });
    // The stopped connection was dropped; the pool hands out good ones.
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([[1]]);
  });

  it('keeps duplicate column names and says "more than" when the count is not possible', async () => {
    const result = await db.query('SELECT c.name, p.name FROM customers c JOIN products p ON p.id = c.id', {
      maxRows: 2,
    });
    expect(result.columns).toEqual(['name', 'name']);
    expect(result.rows).toHaveLength(2);
    expect(result).toMatchObject({ truncated: true, rowCount: null });
  });

  it('never pulls a huge result into memory', async () => {
    const started = Date.now();
    const cross = 'SELECT a.id, b.id AS b FROM order_items a CROSS JOIN order_items b';
    const unlimited = await db.query(cross, { maxRows: 5, timeoutMs: 1_500 });
    expect(unlimited.rows).toHaveLength(5);
    expect(unlimited.truncated).toBe(true);
    expect([null, data.orderItems.length ** 2]).toContain(unlimited.rowCount);
    const limited = await db.query(`${cross} LIMIT 50000000`, { maxRows: 5, timeoutMs: 1_500 });
    expect(limited.rows).toHaveLength(5);
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(await eventually(async () => (await runningQueries(READER, '%CROSS JOIN%')) === 0)).toBe(true);
  });

  it('ends quickly when the signal aborts, and kills the query on the server', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const error = await failure(
      db.query('SELECT SLEEP(10)', { timeoutMs: 20_000, signal: controller.signal }),
    );
    expect(error.code).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await eventually(async () => (await runningQueries(READER, '%SLEEP(10)%')) === 0)).toBe(true);

    const already = await failure(db.query('SELECT 1', { signal: AbortSignal.abort() }));
    expect(already.code).toBe('aborted');
  });

  it('gives every query a fresh read-only UTC session, whatever the previous one did', async () => {
    const single = await openDataDatabase(dataUrl(READER, READER_PASSWORD), { connectionLimit: 1 });
    try {
      await single.query("SET SESSION sql_mode = 'ANSI_QUOTES'");
      await single.query('SET @leak = 42');
      await single.query("PREPARE leaked FROM 'SELECT 1'");
      await single.query('SET NAMES latin1');
      const readOnly =
        single.flavour === 'mariadb' ? '@@SESSION.tx_read_only' : '@@SESSION.transaction_read_only';
      const state = await single.query(
        `SELECT @@SESSION.sql_mode LIKE '%ANSI_QUOTES%' AS ansi, @leak AS leak, ${readOnly} AS ro, ` +
          "@@SESSION.time_zone AS tz, 'ünïcødé ✓' AS text",
      );
      expect(state.rows).toEqual([[0, null, 1, '+00:00', 'ünïcødé ✓']]);
      expect((await failure(single.query('EXECUTE leaked'))).code).toBe('sql_error');
    } finally {
      await single.close();
    }
  });
  it('captures no stack per query (mysql2 `trace`)', async () => {
    const core = (db as unknown as { pool: { pool: { config: { connectionConfig: { trace: boolean } } } } })
      .pool.pool;
    expect(core.config.connectionConfig.trace).toBe(false);
  });

  it('runs each query on its own (autocommit), read-only', async () => {
    const single = await openDataDatabase(dataUrl(READER, READER_PASSWORD), { connectionLimit: 1 });
    try {
      // MariaDB's @@in_transaction is 1 inside START TRANSACTION: the query no longer needs one (nor the
      // ROLLBACK after it), the READ ONLY session makes the statement a read-only transaction by itself.
      const probe =
        single.flavour === 'mariadb'
          ? '@@in_transaction AS open_tx, @@autocommit AS ac, @@SESSION.tx_read_only AS ro'
          : '0 AS open_tx, @@autocommit AS ac, @@SESSION.transaction_read_only AS ro';
      expect((await single.query(`SELECT ${probe}`)).rows).toEqual([[0, 1, 1]]);
      expect((await failure(single.query('CREATE TABLE af_never (a INT)'))).code).toBe('sql_error');
    } finally {
      await single.close();
    }
  });
});

describe('result size (maxBytes)', () => {
  beforeEach(requireServer);

  /** Highest heap use above the start while `work` runs, sampled every millisecond, in bytes. */
  async function peakHeapGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
    const start = process.memoryUsage().heapUsed;
    let peak = start;
    const sample = () => (peak = Math.max(peak, process.memoryUsage().heapUsed));
    const timer = setInterval(sample, 1);
    try {
      const value = await work();
      sample();
      return { value, growth: peak - start };
    } finally {
      clearInterval(timer);
    }
  }

  it('cuts a result of one huge value per row without holding a row in memory, and stops the query', async () => {
    const sql = "SELECT REPEAT('x', 16000000) AS big FROM orders";
    await db.query('SELECT 1'); // a warm pool: the measurement sees the query alone
    // Before the byte limit each call held 10 rows of 16 MB (160 MB of heap, more at the peak).
    const { value: result, growth } = await peakHeapGrowth(() => db.query(sql));
    expect(result).toEqual({
      columns: ['big'],
      rows: [],
      rowCount: data.orders.length,
      truncated: true,
      cutAtBytes: 1_048_576,
    });
    expect(growth).toBeLessThan(12 * 1_048_576);
    expect(await eventually(async () => (await runningQueries(READER, '%REPEAT%')) === 0)).toBe(true);
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([[1]]);
  });

  it('keeps nothing of a stopped query once it is over', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const held = () => {
      gc();
      const usage = process.memoryUsage();
      return usage.heapUsed + usage.external;
    };
    await db.query("SELECT REPEAT('x', 16000000) AS big FROM orders");
    const before = held();
    for (let i = 0; i < 10; i++) await db.query("SELECT REPEAT('x', 16000000) AS big FROM orders");
    // Buffers are freed a collection after the objects that held them, and sockets close a tick later.
    await new Promise((resolve) => setTimeout(resolve, 100));
    held();
    // Each stopped query read about 2 MB; none of it may stay for the client timer's lifetime.
    expect(held() - before).toBeLessThan(6 * 1_048_576);
  });

  it('keeps the rows that fit when many rows together pass the limit', async () => {
    // Each row: an integer (8 bytes) and 300 bytes of text; 32 rows make 9,856 bytes, 33 would pass 10,000.
    const result = await db.query("SELECT id, REPEAT('y', 300) AS pad FROM orders ORDER BY id", {
      maxRows: 100,
      maxBytes: 10_000,
    });
    expect(result.rows.map((row) => row[0])).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(result).toMatchObject({ truncated: true, rowCount: data.orders.length, cutAtBytes: 10_000 });
  });

  it('leaves a result within the limit as it was, up to the last byte', async () => {
    const exact = await db.query("SELECT REPEAT('z', 100) AS z FROM orders LIMIT 5", { maxBytes: 500 });
    expect(exact).toEqual({
      columns: ['z'],
      rows: Array.from({ length: 5 }, () => ['z'.repeat(100)]),
      rowCount: 5,
      truncated: false,
    });
    // More rows than maxRows, each small: cut by rows, as before, not by bytes.
    const many = await db.query("SELECT id, REPEAT('y', 300) AS pad FROM orders ORDER BY id", {
      maxRows: 20,
      maxBytes: 10_000,
    });
    expect(many.rows).toHaveLength(20);
    expect(many).toMatchObject({ truncated: true, rowCount: data.orders.length });
    expect(many).not.toHaveProperty('cutAtBytes');
  });

  it('takes its default from the database options', async () => {
    const small = await openDataDatabase(dataUrl(READER, READER_PASSWORD), {
      connectionLimit: 1,
      maxResultBytes: 2_000,
    });
    try {
      const result = await small.query("SELECT REPEAT('w', 1500) AS w FROM orders");
      expect(result).toMatchObject({ rows: [['w'.repeat(1500)]], cutAtBytes: 2_000 });
    } finally {
      await small.close();
    }
  });
});

describe('errors', () => {
  beforeEach(requireServer);

  it('returns the server message of a bad query, never the URL or the password', async () => {
    const error = await failure(db.query('SELECT nope FROM orders'));
    expect(error.code).toBe('sql_error');
    expect(error.message).toMatch(/Unknown column 'nope'/);
    expect(error.transient).toBe(false);
    const denied = await failure(db.query('SELECT * FROM mysql.user'));
    expect(denied.message).toMatch(/denied/i);
    for (const e of [error, denied]) {
      expect(e.message).not.toContain(READER_PASSWORD);
      expect(e.message).not.toContain('mysql://');
    }
  });

  it('turns a connection killed mid-query into a transient error', async () => {
    const pending = db.query('SELECT SLEEP(5)', { timeoutMs: 10_000 }).catch((e: unknown) => e);
    let id: number | undefined;
    await eventually(async () => {
      const [rows] = await root.query<RowDataPacket[]>(
        "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = ? AND INFO LIKE '%SLEEP(5)%'",
        [READER],
      );
      id = rows[0]?.['id'] as number | undefined;
      return id !== undefined;
    });
    expect(id).toBeDefined();
    await root.query(`KILL CONNECTION ${Number(id)}`);
    const error = await pending;
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).transient).toBe(true);
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([[1]]);
  });

  it('turns a dropped connection into a transient error, and recovers', async () => {
    const proxy = await startProxy(HOST, PORT);
    const proxied = await openDataDatabase(dataUrl(READER, READER_PASSWORD, proxy.port));
    try {
      expect((await proxied.query('SELECT 1 AS one')).rows).toEqual([[1]]);
      const pending = proxied.query('SELECT SLEEP(3)', { timeoutMs: 10_000 }).catch((e: unknown) => e);
      await new Promise((resolve) => setTimeout(resolve, 200));
      proxy.cut();
      const midQuery = await pending;
      expect(midQuery).toBeInstanceOf(ToolError);
      expect((midQuery as ToolError).transient).toBe(true);
      expect((midQuery as ToolError).code).toBe('data_db_unavailable');

      const whileDown = await failure(proxied.query('SELECT 1'));
      expect(whileDown.transient).toBe(true);
      expect(whileDown.message).not.toContain(READER_PASSWORD);

      proxy.heal();
      expect((await proxied.query('SELECT 2 AS two')).rows).toEqual([[2]]);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });
});

/** A TCP proxy to the server that can drop every connection (and refuse new ones) on demand. */
async function startProxy(
  host: string,
  port: number,
): Promise<{ port: number; cut(): void; heal(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let broken = false;
  const server: Server = createServer((client) => {
    if (broken) {
      client.destroy();
      return;
    }
    const upstream = netConnect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cut() {
      broken = true;
      for (const socket of sockets) socket.destroy();
    },
    heal() {
      broken = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
