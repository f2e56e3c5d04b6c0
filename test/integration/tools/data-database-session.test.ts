// The data database's session, set once per pooled connection (src/tools/data-session.ts): the round trips of
// each tool call counted on the wire (a proxy that reads the client's commands), what a statement that could
// touch its session gets instead (a reset before it, its connection dropped after it), and that the guarded
// statements of the everyday corpus leave the session exactly as they found it. Seeds its own database
// af_test_sess_<random> and reader, and drops them at the end.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/kernel/errors.js';
import { quoteIdentifier } from '../../../src/store/pool.js';
import { openDataDatabase, type DataDatabase } from '../../../src/tools/data-database.js';
import { isSessionNeutral, sessionSetup, statementText } from '../../../src/tools/data-session.js';
import { createSqlTools } from '../../../src/tools/sql-tools.js';
import { checkSelectOnly } from '../../../src/tools/sql-guard.js';
import type { Tool } from '../../../src/kernel/tool.js';
import {
  COM_QUERY,
  COM_RESET_CONNECTION,
  startMysqlCommandProxy,
  type MysqlCommandProxy,
} from '../../support/mysql-command-proxy.js';
import { CORPORA_DIR } from '../../support/repo-paths.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';

const data = new SeededDataDatabase('sess');
const { database: DATABASE, host: HOST, port: PORT } = data;

let root: Pool;
let proxy: MysqlCommandProxy;
let setupError: unknown;

function requireServer(): void {
  if (setupError !== undefined) throw setupError;
}

beforeAll(async () => {
  try {
    await data.seed();
    root = data.rootPool();
    proxy = await startMysqlCommandProxy(PORT, HOST);
  } catch (error) {
    setupError = error;
  }
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  if (!root) return;
  await data.drop(root);
  await root.end();
});

/** A data database of one connection, through the counting proxy. */
function openSingle(): Promise<DataDatabase> {
  const url = data.readerUrl(proxy.port, '127.0.0.1');
  return openDataDatabase(url, { connectionLimit: 1 });
}

/** The commands `work` sends, each as its SQL or its command name. */
async function commandsOf(work: () => Promise<unknown>): Promise<string[]> {
  proxy.clear();
  await work().catch(() => undefined);
  return proxy
    .commands()
    .map((c) =>
      c.command === COM_QUERY
        ? String(c.sql)
        : c.command === COM_RESET_CONNECTION
          ? 'RESET'
          : `#${c.command}`,
    );
}

describe('round trips', () => {
  beforeEach(requireServer);

  it('sets a connection up once, then sends one statement per query and nothing on release', async () => {
    const db = await openSingle();
    try {
      // The first use of the pooled connection sets its session (openDataDatabase's own checks used it
      // already, so the session is there); every later query is its statement alone.
      const first = await commandsOf(() => db.query('SELECT 1'));
      expect(first.filter((sql) => sql.startsWith('SET NAMES'))).toHaveLength(first.length - 1);
      const statement =
        db.flavour === 'mariadb'
          ? /^SET STATEMENT max_statement_time=5\.000, sql_select_limit=11, tx_read_only=1, time_zone='\+00:00' FOR SELECT status/
          : /^SELECT status/;
      const grouped = await commandsOf(() =>
        db.query('SELECT status, COUNT(*) AS n FROM orders GROUP BY status'),
      );
      expect(grouped).toHaveLength(1);
      expect(grouped[0]).toMatch(statement);
      // A statement the server refuses: still one round trip, and the connection is kept.
      expect(await commandsOf(() => db.query('SELECT COUNT(*) FROM orderz'))).toHaveLength(1);
      // Cut at maxRows: the statement and its COUNT(*) (on MySQL the COUNT's own limits take a SET).
      const truncated = await commandsOf(() => db.query('SELECT id FROM orders ORDER BY id', { maxRows: 3 }));
      expect(truncated).toHaveLength(db.flavour === 'mariadb' ? 2 : 3);
      // The schema tools: their information_schema queries alone (on MySQL a SET back to the defaults).
      const extra = db.flavour === 'mariadb' ? 0 : 1;
      expect(await commandsOf(() => db.listTables())).toHaveLength(2 + extra);
      expect(await commandsOf(() => db.describeTable('orders'))).toHaveLength(3);
      expect(proxy.commands().some((c) => c.command === COM_RESET_CONNECTION)).toBe(false);
    } finally {
      await db.close();
    }
  });
});

describe('a statement that could touch its session', () => {
  beforeEach(requireServer);

  it('runs in a reset session on a connection dropped after it, so nothing reaches the next query', async () => {
    const db = await openSingle();
    try {
      const connectionId = async () => Number((await db.query('SELECT CONNECTION_ID()')).rows[0]?.[0]);
      const before = await connectionId();
      // Neutral statements keep their connection.
      expect(await connectionId()).toBe(before);

      const lock = `${DATABASE}_lock`;
      const sent = await commandsOf(() => db.query(`SELECT GET_LOCK('${lock}', 0) AS got`));
      expect(sent[0]).toBe('RESET');
      expect(sent.at(-1)).toMatch(/GET_LOCK/);
      const isFree = async () => {
        const [rows] = await root.query<RowDataPacket[]>('SELECT IS_FREE_LOCK(?) AS free', [lock]);
        return Number(rows[0]?.['free']) === 1;
      };
      expect(await eventually(isFree)).toBe(true);
      const after = await connectionId();
      expect(after).not.toBe(before);

      // Variables, a prepared statement, the character set and the SQL mode: gone with their connection.
      await db.query('SET @leak = 42');
      await db.query("PREPARE leaked FROM 'SELECT 1'");
      await db.query('SET NAMES latin1');
      await db.query("SET SESSION sql_mode = 'ANSI_QUOTES'");
      expect((await db.query('SELECT "plain" AS q, \'ünïcødé ✓\' AS text')).rows).toEqual([
        ['plain', 'ünïcødé ✓'],
      ]);
      expect(await connectionId()).not.toBe(after);
    } finally {
      await db.close();
    }
  });

  it("cannot follow the previous user's RAND() sequence: the generator is the session's, seeded per connection", async () => {
    const db = await openSingle();
    try {
      // MariaDB's RAND() without a seed steps the session's generator (seed1 = 3·seed1 + seed2, seed2 = seed1 +
      // seed2 + 33, mod 2^30 - 1): two values give its whole state. Kept across users, the next value tells how
      // many RAND() calls ran in between, here the row count of the victim's table, and predicts its samples.
      const MAX = 0x3fffffff;
      const draw = async () => Math.round(Number((await db.query('SELECT RAND() AS r')).rows[0]?.[0]) * MAX);
      const x1 = await draw();
      const x2 = await draw();
      let s1 = x2;
      let s2 = (((((x2 - 3 * x1) % MAX) + MAX) % MAX) + x2 + 33) % MAX;
      const victim = 'SELECT SUM(RAND() < 2) AS n FROM orders';
      expect((await checkSelectOnly(victim)).ok).toBe(true);
      const victimRows = Number((await db.query(victim)).rows[0]?.[0]);
      expect(victimRows).toBeGreaterThan(2);
      expect(victimRows).toBeLessThan(10_000);
      const x3 = await draw();
      let steps: number | undefined;
      for (let n = 0; n < 10_000 && steps === undefined; n += 1) {
        s1 = (s1 * 3 + s2) % MAX;
        s2 = (s1 + s2 + 33) % MAX;
        if (s1 === x3) steps = n;
      }
      expect(steps).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it("reads nothing a neutral statement left: the warnings of the previous user's query", async () => {
    const db = await openSingle();
    try {
      // The CAST warns with the value it truncated: data of the previous query, which SHOW WARNINGS would show.
      await db.query("SELECT CAST('12secret' AS SIGNED) AS n");
      const shown = await db.query('SHOW WARNINGS');
      expect(JSON.stringify(shown.rows)).not.toContain('secret');
    } finally {
      await db.close();
    }
  });
});

describe('guarded statements', () => {
  beforeEach(requireServer);

  it('leave the session as they found it (the everyday corpus through sql_query)', async () => {
    const db = await openSingle();
    const tools = new Map(createSqlTools(db).map((tool: Tool) => [tool.name, tool]));
    const sqlQuery = tools.get('sql_query') as Tool;
    const pool = (db as unknown as { pool: Pool }).pool;
    /** The session as the connection holds it, read on the pooled connection itself, behind the tools' back. */
    const session = async () => {
      const connection: PoolConnection = await pool.getConnection();
      try {
        const readOnly =
          db.flavour === 'mariadb' ? '@@SESSION.tx_read_only' : '@@SESSION.transaction_read_only';
        const open = db.flavour === 'mariadb' ? '@@in_transaction' : '0';
        const users =
          db.flavour === 'mariadb' ? '(SELECT COUNT(*) FROM information_schema.USER_VARIABLES)' : '0';
        const [rows] = await connection.query<RowDataPacket[]>(
          `SELECT CONNECTION_ID() AS id, @@SESSION.sql_mode AS mode, @@SESSION.time_zone AS tz, ` +
            `@@SESSION.character_set_client AS cs_client, @@SESSION.character_set_results AS cs_results, ` +
            `@@SESSION.collation_connection AS coll, ${readOnly} AS ro, @@SESSION.autocommit AS ac, ` +
            `@@SESSION.sql_select_limit AS lim, ${open} AS open_tx, ${users} AS user_vars, ` +
            `LAST_INSERT_ID() AS last_id, DATABASE() AS db`,
        );
        // Which connection does not matter: a query stopped at its row limit drops its own.
        const { id: _id, ...state } = rows[0] as Record<string, unknown>;
        return state;
      } finally {
        connection.release();
      }
    };
    try {
      const baseline = await session();
      expect(baseline).toMatchObject({ tz: '+00:00', ro: 1, ac: 1, open_tx: 0, user_vars: 0, db: DATABASE });
      const corpus = readFileSync(join(CORPORA_DIR, 'legit-sql.txt'), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.startsWith('#'));
      let neutral = 0;
      for (const sql of corpus) {
        await Promise.resolve(
          sqlQuery.execute({ sql }, { signal: new AbortController().signal } as never),
        ).catch((error: unknown) => expect(error, sql).toBeInstanceOf(ToolError));
        if (!isSessionNeutral(sql)) continue;
        neutral += 1;
        expect(await session(), sql).toEqual(baseline);
      }
      // Nearly all of them take the one-round-trip path.
      expect(neutral).toBeGreaterThan(corpus.length * 0.9);
    } finally {
      await db.close();
    }
  }, 120_000);
});

describe('the session set-up', () => {
  beforeEach(requireServer);

  it('turns autocommit on: a server whose default is off would keep a transaction open across users', async () => {
    const [version] = await root.query<RowDataPacket[]>('SELECT VERSION() AS v');
    const flavour = /mariadb/i.test(String(version[0]?.['v'])) ? 'mariadb' : 'mysql';
    const connection = await root.getConnection();
    try {
      // What a connection of a server with autocommit=0 in its configuration starts with. Without a reset
      // between users, its first SELECT's transaction would never end: its snapshot served every later job
      // stale rows and its metadata locks held off any ALTER of the tables it read.
      await connection.query('SET SESSION autocommit = 0');
      await connection.query(sessionSetup(flavour, undefined));
      await connection.query(`SELECT COUNT(*) FROM ${quoteIdentifier(DATABASE)}.orders`);
      const open = flavour === 'mariadb' ? '@@in_transaction' : '0';
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT @@SESSION.autocommit AS ac, ${open} AS open_tx`,
      );
      expect(rows[0]).toEqual({ ac: 1, open_tx: 0 });
    } finally {
      connection.destroy();
    }
  });
});

describe('MariaDB: settings bound to the statement', () => {
  beforeEach(requireServer);

  it('runs a statement read-only and in UTC whatever its session holds', async () => {
    const [version] = await root.query<RowDataPacket[]>('SELECT VERSION() AS v');
    if (!/mariadb/i.test(String(version[0]?.['v']))) return;
    const connection = await root.getConnection();
    try {
      await connection.query("SET SESSION tx_read_only = 0, SESSION time_zone = '+05:00'");
      const limits = { timeoutMs: 5_000, fetch: 11 };
      const [rows] = await connection.query<RowDataPacket[]>(
        statementText('mariadb', 'SELECT @@time_zone AS tz, @@tx_read_only AS ro', limits),
      );
      expect(rows[0]).toEqual({ tz: '+00:00', ro: 1 });
      const locking = statementText(
        'mariadb',
        `SELECT id FROM ${quoteIdentifier(DATABASE)}.orders WHERE id = 1 FOR UPDATE`,
        limits,
      );
      await expect(connection.query(locking)).rejects.toMatchObject({ errno: 1792 });
    } finally {
      connection.release();
    }
  });
});

async function eventually(check: () => Promise<boolean>, timeoutMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}
