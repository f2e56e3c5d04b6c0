import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { checkSelectAst, checkSelectOnly, checkSelectText } from '../../../src/tools/sql-guard.js';
import type { SqlGuardVerdict } from '../../../src/tools/sql-guard.js';
import { lexSql } from '../../../src/tools/sql-guard-lexer.js';
import { join } from 'node:path';
import { CORPORA_DIR } from '../../support/repo-paths.js';

function readLines(name: string): string[] {
  const text = readFileSync(join(CORPORA_DIR, name), 'utf8');
  return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

const hostile = [
  ...readLines('hostile-sql.txt'),
  ...(JSON.parse(readFileSync(join(CORPORA_DIR, 'hostile-sql-multiline.json'), 'utf8')) as string[]),
];
const legit = readLines('legit-sql.txt');
const analytics = readLines('legit-sql-analytics.txt');

/** Legitimate analytics the guard still refuses, with the reason (docs/sql-safety.md). */
const STILL_REFUSED = new Map([
  // node-sql-parser reserves MINUS (Oracle's EXCEPT) even as an alias; MySQL does not.
  ['SELECT ROUND(total * .15, 2) AS tip, -.25 AS minus FROM orders LIMIT 3', /"minus" is a reserved word/],
]);

const SALES_TABLES = ['customers', 'products', 'orders', 'order_items'];

function reasonOf(verdict: SqlGuardVerdict): string {
  if (verdict.ok) throw new Error(`expected a refusal, got ok with tables ${JSON.stringify(verdict.tables)}`);
  return verdict.reason;
}

const refusal = async (sql: string, allowedTables?: readonly string[]): Promise<string> =>
  reasonOf(await checkSelectOnly(sql, allowedTables ? { allowedTables } : {}));

const ok = async (sql: string, allowedTables: readonly string[]): Promise<boolean> =>
  (await checkSelectOnly(sql, { allowedTables })).ok;

/** The queries whose verdict is ok (or, with `want: false`, refused). */
async function judged(
  queries: readonly string[],
  check: (sql: string) => Promise<SqlGuardVerdict>,
  want = true,
): Promise<string[]> {
  const verdicts = await Promise.all(queries.map(check));
  return queries.filter((_, i) => verdicts[i]?.ok === want);
}

describe('corpora', () => {
  it('are big enough', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(200);
    expect(legit.length).toBeGreaterThanOrEqual(100);
  });

  it('refuses every hostile string, with a non-empty reason', async () => {
    const passed = await judged(hostile, (sql) => checkSelectOnly(sql));
    expect(passed, `hostile strings that passed the guard:\n${passed.join('\n')}`).toEqual([]);
    for (const sql of hostile) expect((await refusal(sql)).trim().length).toBeGreaterThan(10);
  });

  it('refuses every hostile string even when an allowlist names every table', async () => {
    const allowedTables = [...SALES_TABLES, 'secret', 't', 'x', 'u', 'evil', 'seq', 'copy', 'orders_old'];
    expect(await judged(hostile, (sql) => checkSelectOnly(sql, { allowedTables }))).toEqual([]);
  });

  it('passes every legitimate query and reports its tables', async () => {
    const failures: string[] = [];
    for (const sql of legit) {
      const verdict = await checkSelectOnly(sql);
      if (!verdict.ok) failures.push(`${sql}\n  -> ${verdict.reason}`);
    }
    expect(failures, `legitimate queries that were refused:\n${failures.join('\n')}`).toEqual([]);
  });

  it('passes every legitimate query under the sales allowlist (qualified names listed as such)', async () => {
    const allowedTables = [...SALES_TABLES, 'sales.customers', 'sales.orders'];
    expect(await judged(legit, (sql) => checkSelectOnly(sql, { allowedTables }), false)).toEqual([]);
  });

  it('refuses each hostile string by the AST layer alone unless the trick is lexical (comments, backslashes)', async () => {
    // Defence in depth: the raw-text pass is not the only thing standing between the model and the server.
    const lexical = hostile.filter((sql) => !lexSql(sql).ok);
    const lexed = hostile.filter((sql) => lexSql(sql).ok);
    expect(await judged(lexed, (sql) => checkSelectAst(sql))).toEqual([]);
    // ... and the lexical tricks are exactly what the text pass is for.
    for (const sql of lexical) expect(checkSelectText(sql)).toBeTruthy();
    expect(lexical.length).toBeGreaterThan(20);
  });

  it('passes every legitimate query through each layer separately', async () => {
    expect(legit.filter((sql) => checkSelectText(sql) !== undefined)).toEqual([]);
    expect(await judged(legit, (sql) => checkSelectAst(sql), false)).toEqual([]);
  });
});

describe('unusual legitimate analytics', () => {
  it('refuses at most 3% of them: exactly the known ones, each with its reason', async () => {
    expect(analytics.length).toBeGreaterThanOrEqual(150);
    const refused = await judged(analytics, (sql) => checkSelectOnly(sql), false);
    expect(refused).toEqual([...STILL_REFUSED.keys()]);
    expect(refused.length / analytics.length).toBeLessThanOrEqual(0.03);
    for (const [sql, reason] of STILL_REFUSED) expect(await refusal(sql)).toMatch(reason);
  });

  it('passes them through each layer separately', async () => {
    const accepted = analytics.filter((sql) => !STILL_REFUSED.has(sql));
    expect(accepted.filter((sql) => checkSelectText(sql) !== undefined)).toEqual([]);
    expect(await judged(accepted, (sql) => checkSelectAst(sql), false)).toEqual([]);
  });

  it('runs the query without the trailing comment it accepted', async () => {
    expect(await checkSelectOnly('SELECT COUNT(*) FROM orders -- all of them')).toEqual({
      ok: true,
      tables: ['orders'],
      sql: 'SELECT COUNT(*) FROM orders ',
    });
    expect(await checkSelectOnly('SELECT 1; # one\n')).toMatchObject({ ok: true, sql: 'SELECT 1; \n' });
  });

  it('reports the tables of rewritten constructs', async () => {
    expect(
      await checkSelectOnly(
        'SELECT c.name, jt.tag FROM customers c JOIN JSON_TABLE(JSON_ARRAY(c.country), ' +
          "'$[*]' COLUMNS (tag VARCHAR(10) PATH '$')) AS jt ON 1 = 1",
      ),
    ).toMatchObject({ ok: true, tables: ['customers'] });
    expect(
      await checkSelectOnly(
        'SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY (SELECT MAX(price) FROM products)) OVER () FROM orders',
      ),
    ).toMatchObject({ ok: true, tables: ['products', 'orders'] });
    expect(await ok('SELECT * FROM orders USE INDEX (PRIMARY) NATURAL JOIN secret', SALES_TABLES)).toBe(
      false,
    );
  });
});

describe('rules only the guard enforces (the database runs these queries: docs/sql-safety.md)', () => {
  // Named locks need no privilege; a shared row lock needs only SELECT and is allowed in a read-only
  // transaction; variables are readable by anyone; SLEEP and kin only wait. The database bounds each by the
  // query's time limit (and the reset of the connection), the guard refuses them, in each pass on its own.
  it.each([
    "SELECT GET_LOCK('x', 0)",
    "SELECT RELEASE_LOCK('x')",
    "SELECT IS_USED_LOCK('x'), IS_FREE_LOCK('x')",
    'SELECT RELEASE_ALL_LOCKS()',
    'SELECT id FROM orders WHERE id = 1 LOCK IN SHARE MODE',
    'SELECT id FROM orders WHERE id = 1.0LOCK IN SHARE MODE',
    'SELECT id FROM orders FOR SHARE',
    'SELECT SLEEP(1)',
    "SELECT BENCHMARK(1000000, MD5('a'))",
    "SELECT MASTER_POS_WAIT('log', 4, 1)",
    'SELECT @@version',
    'SELECT * FROM information_schema.tables',
    // What the previous statement on a pooled connection left (FOUND_ROWS survives even a connection reset).
    'SELECT FOUND_ROWS()',
    'SELECT ROW_COUNT()',
    // MySQL's locking service and version tokens: locks held for the rest of the session.
    "SELECT service_get_write_locks('ns', 'l', 0)",
    "SELECT version_tokens_lock_shared('t', 0)",
  ])('%s: refused by the text pass alone and by the AST pass alone', async (sql) => {
    expect(checkSelectText(sql)).toBeTruthy();
    expect((await checkSelectAst(sql)).ok).toBe(false);
  });

  it('sees a keyword glued to a number in the text pass too', () => {
    // MySQL reads `1.5INTO` as `1.5 INTO`; a scan for the word INTO must as well.
    expect(checkSelectText("SELECT 1.5INTO OUTFILE '/tmp/x'")).toMatch(/INTO is not allowed/);
    expect(checkSelectText("SELECT .5INTO DUMPFILE '/tmp/x'")).toMatch(/INTO is not allowed/);
    expect(checkSelectText('SELECT id FROM orders WHERE id = 1.0LOCK IN SHARE MODE')).toMatch(/Locking/);
    expect(checkSelectText('SELECT id FROM orders WHERE id = 1e0FOR UPDATE')).toMatch(/Locking/);
    expect(checkSelectText('SELECT 1.5FROM mysql.user')).toMatch(/system schema mysql/);
  });
});

describe('structural limits before parsing', () => {
  it.each([
    [`SELECT ${'('.repeat(33)}1${')'.repeat(33)}`, /nests parentheses 33 deep \(at most 32\)/],
    [`SELECT ${Array(1_001).fill('1').join(',')}`, /has 2002 tokens \(at most 2000\)/],
    [`SELECT '${'x'.repeat(8_000)}'`, /too long \(8009 characters, at most 8000\)/],
  ])('%#', async (sql, reason) => {
    expect(await refusal(sql)).toMatch(reason);
    expect(reasonOf(await checkSelectAst(sql))).toMatch(reason);
  });

  it('refuses a parse that outlasts the deadline as too complex, and recovers', async () => {
    const nested = `SELECT ${'CAST(('.repeat(14)}1${') AS CHAR)'.repeat(14)}`;
    expect(await refusal(nested)).toMatch(/too complex to check \(parsing it took over \d+ ms, twice\)/);
    const after = await checkSelectOnly('SELECT 1');
    expect(after.ok ? '' : after.reason).toBe('');
  });
});

describe('reasons name what to fix', () => {
  it.each([
    ['DELETE FROM orders', /Only SELECT statements are allowed; got DELETE/],
    ['dElEtE FROM orders', /got DELETE/],
    ['UPDATE orders SET total = 0', /got UPDATE/],
    ['INSERT INTO orders VALUES (1)', /got INSERT/],
    ['DROP TABLE orders', /got DROP/],
    ['SHOW TABLES', /got SHOW/],
    ['EXPLAIN SELECT 1', /got EXPLAIN/],
    ['HANDLER orders OPEN', /got HANDLER/],
    ['DO SLEEP(1)', /got DO/],
    ['SET @a = 1', /got SET/],
    ['CALL p()', /got CALL/],
    ['LOAD DATA INFILE "/etc/passwd" INTO TABLE t', /got LOAD/],
    ['WITH x AS (SELECT 1) DELETE FROM orders', /got DELETE/],
    ['WITH x AS (DELETE FROM orders) SELECT * FROM x', /DELETE/],
    ['SELECT 1; DROP TABLE orders', /one statement/],
    ['SELECT SLEEP(5)', /SLEEP\(\)/],
    ['SELECT `benchmark`(1000, 1)', /BENCHMARK\(\)/],
    ['SELECT * FROM orders ORDER BY LOAD_FILE("/etc/passwd")', /LOAD_FILE\(\)/],
    ['SELECT 1 FROM orders HAVING GET_LOCK("x", 1)', /GET_LOCK\(\)/],
    ['SELECT evil_db.f(1)', /Schema-qualified function/],
    ['SELECT `my fn`(1)', /Quoted function name/],
    ['SELECT * FROM mysql.user', /system schema mysql/],
    ['SELECT * FROM information_schema.tables', /system schema information_schema/],
    ['SELECT * FROM performance_schema.threads', /system schema performance_schema/],
    ['SELECT * FROM sys.processlist', /system schema sys/],
    ['SELECT * FROM orders INTO OUTFILE "/tmp/x"', /INTO/],
    ['SELECT * FROM orders FOR UPDATE', /Locking clauses \(FOR UPDATE\)/],
    ['SELECT * FROM orders LOCK IN SHARE MODE', /LOCK IN SHARE MODE/],
    ['SELECT @@version', /variables/],
    ['SELECT @a := 1', /variables/],
    ['SELECT * FROM orders WHERE id = ?', /Placeholders/],
    ['SELECT 1 /*!50000 , SLEEP(1) */', /Executable comments/],
    ['SELECT /*+ BKA(t) */ 1', /Optimizer hints/],
    ['SELECT 1 -- ; DROP TABLE orders', /comment at the end looks like SQL/],
    ['SELECT * FROM orders WHERE id = 1 # AND total = 0', /comment at the end looks like SQL/],
    ['-- note\nSELECT 1', /only allowed at the end of the last line/],
    ['SELECT 1\n-- note', /only allowed at the end of the last line/],
    ['SELECT 1 -- note\nFROM orders', /only allowed at the end of the last line/],
    ['SELECT 5--3', /Comments are not allowed \(found --/],
    ["SELECT 'a\\'b'", /Backslash escapes are not allowed/],
    ["SELECT '%\\_%'", /Backslash escapes are not allowed/],
    ['SELECT 1 \\ 2', /Backslashes are only allowed inside quoted strings/],
    ['SELECT * FROM', /Could not parse the query as MySQL \(at the end/],
    ['SELECT 1 FROM orders PROCEDURE ANALYSE()', /Could not parse the query as MySQL \(near "/],
    ['', /empty/],
  ])('%s', async (sql, pattern) => {
    expect(await refusal(sql)).toMatch(pattern);
  });

  it('names the table that is outside the allowlist', async () => {
    expect(await refusal('SELECT * FROM orders JOIN secret ON 1 = 1', SALES_TABLES)).toMatch(
      /Table secret is not in the allowed tables: customers, products, orders, order_items/,
    );
  });
});

describe('what passes', () => {
  it('returns the tables referenced, in order, once each, without CTE names or DUAL', async () => {
    expect(await checkSelectOnly('SELECT 1')).toEqual({ ok: true, tables: [], sql: 'SELECT 1' });
    expect(await checkSelectOnly('SELECT 1 FROM DUAL')).toMatchObject({ ok: true, tables: [] });
    expect(
      await checkSelectOnly(
        'WITH r AS (SELECT customer_id, SUM(total) AS s FROM orders GROUP BY customer_id) ' +
          'SELECT c.name, r.s FROM r JOIN customers c ON c.id = r.customer_id ' +
          'WHERE c.id IN (SELECT customer_id FROM orders)',
      ),
    ).toMatchObject({ ok: true, tables: ['orders', 'customers'] });
    expect(await checkSelectOnly('SELECT * FROM sales.orders')).toMatchObject({
      ok: true,
      tables: ['sales.orders'],
    });
  });

  it('accepts one trailing semicolon and surrounding whitespace', async () => {
    expect((await checkSelectOnly('  SELECT 1;  \n')).ok).toBe(true);
    expect((await checkSelectOnly('SELECT 1\n;')).ok).toBe(true);
  });

  it('accepts comment-, semicolon- and keyword-looking text inside string literals and quoted identifiers', async () => {
    for (const sql of [
      "SELECT '/*! DROP TABLE orders */' AS s",
      "SELECT 'a -- b # c /* d */' AS s",
      "SELECT '; DELETE FROM orders; ' AS s",
      "SELECT 'it''s SLEEP(1) INTO OUTFILE @x FOR UPDATE mysql.user' AS s",
      'SELECT name FROM customers WHERE name = "a;b"',
      'SELECT `x;y` FROM customers',
    ]) {
      expect(await checkSelectOnly(sql), sql).toMatchObject({ ok: true });
    }
  });
});

describe('allowlist', () => {
  const allowedTables = ['Customers', 'orders'];
  const allowed = (sql: string): Promise<boolean> => ok(sql, allowedTables);

  it('compares table names case-insensitively', async () => {
    expect(await allowed('SELECT * FROM customers JOIN ORDERS ON 1 = 1')).toBe(true);
    expect(await allowed('SELECT * FROM `orders`')).toBe(true);
  });

  it('refuses any table outside it, wherever it is referenced', async () => {
    for (const sql of [
      'SELECT * FROM secret',
      'SELECT * FROM orders, secret',
      'SELECT * FROM orders o LEFT JOIN secret s ON s.id = o.id',
      'SELECT (SELECT COUNT(*) FROM secret)',
      'SELECT * FROM orders WHERE id IN (SELECT id FROM secret)',
      'SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM secret)',
      'SELECT 1 UNION SELECT id FROM secret',
      'SELECT * FROM (SELECT * FROM secret) t',
      'SELECT * FROM orders, LATERAL (SELECT * FROM secret) s',
      'WITH c AS (SELECT * FROM secret) SELECT * FROM c',
      'SELECT * FROM other_db.orders',
    ]) {
      expect(await allowed(sql), sql).toBe(false);
    }
  });

  it('does not count CTE names as tables, within their scope only', async () => {
    expect(await allowed('WITH secret AS (SELECT 1 AS a) SELECT * FROM secret')).toBe(true);
    expect(await allowed('WITH a AS (SELECT * FROM orders), b AS (SELECT * FROM a) SELECT * FROM b')).toBe(
      true,
    );
    expect(
      await allowed(
        'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 9) SELECT * FROM r',
      ),
    ).toBe(true);
    expect(await allowed('WITH x AS (SELECT 1) SELECT * FROM orders UNION SELECT * FROM x')).toBe(true);
    // A non-recursive CTE body naming itself reads the real table of that name.
    expect(await allowed('WITH secret AS (SELECT * FROM secret) SELECT * FROM secret')).toBe(false);
    // A CTE cannot see the CTEs defined after it.
    expect(await allowed('WITH b AS (SELECT * FROM secret), secret AS (SELECT 1) SELECT * FROM b')).toBe(
      false,
    );
    // Outside the subquery that defines it, the name is a table again.
    expect(await allowed('SELECT * FROM (WITH secret AS (SELECT 1) SELECT * FROM secret) a, secret')).toBe(
      false,
    );
    // A CTE never shadows a schema-qualified table.
    expect(await allowed('WITH orders AS (SELECT 1) SELECT * FROM other_db.orders')).toBe(false);
    // A WITH inside the parentheses of the first query of a UNION covers that query only (MySQL 8).
    expect(
      await allowed('(WITH secret AS (SELECT 1 AS id) SELECT id FROM secret) UNION (SELECT id FROM secret)'),
    ).toBe(false);
    expect(
      await allowed('(WITH secret AS (SELECT 1 AS id) SELECT id FROM secret) UNION SELECT id FROM secret'),
    ).toBe(false);
  });

  it('fails closed on an empty allowlist, still allowing table-free queries', async () => {
    expect((await checkSelectOnly('SELECT * FROM orders', { allowedTables: [] })).ok).toBe(false);
    expect((await checkSelectOnly('SELECT 1', { allowedTables: [] })).ok).toBe(true);
  });

  it('matches schema-qualified references only against schema-qualified entries', async () => {
    expect((await checkSelectOnly('SELECT * FROM sales.orders', { allowedTables: ['orders'] })).ok).toBe(
      false,
    );
    expect(
      (await checkSelectOnly('SELECT * FROM sales.orders', { allowedTables: ['Sales.Orders'] })).ok,
    ).toBe(true);
  });
});

describe('properties', () => {
  it('never throws, whatever the input', async () => {
    const sqlish = fc.string({
      unit: fc.constantFrom(
        'SELECT ',
        'WITH x AS ',
        ' FROM orders',
        ' WHERE ',
        'SLEEP(1)',
        ' UNION ',
        '(',
        ')',
        ',',
        ';',
        "'",
        '"',
        '`',
        '\\',
        '/*',
        '*/',
        '--',
        '#',
        '@',
        ':=',
        '?',
        ' ',
        '\n',
        '1',
        'a',
        '.',
        'mysql',
        ' INTO ',
        'DELETE ',
      ),
      maxLength: 40,
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ unit: 'binary' }), fc.string(), sqlish), async (sql) => {
        const verdict = await checkSelectOnly(sql);
        expect(verdict).toBeDefined();
        if (!verdict.ok) expect(verdict.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: 1000 },
    );
  });

  it('does not throw on inputs that are not strings', async () => {
    for (const value of [undefined, null, 42, {}, ['SELECT 1']]) {
      expect((await checkSelectOnly(value as unknown as string)).ok).toBe(false);
    }
  });

  it('refuses a legitimate SELECT with any write statement appended after a semicolon', async () => {
    const table = fc.constantFrom(...SALES_TABLES, 'mysql.user', '`orders`');
    const write = fc.oneof(
      table.map((t) => `DELETE FROM ${t}`),
      table.map((t) => `DROP TABLE ${t}`),
      table.map((t) => `TRUNCATE TABLE ${t}`),
      table.map((t) => `UPDATE ${t} SET id = 0`),
      table.map((t) => `INSERT INTO ${t} VALUES (1)`),
      table.map((t) => `REPLACE INTO ${t} SELECT * FROM ${t}`),
      table.map((t) => `ALTER TABLE ${t} ADD x INT`),
      table.map((t) => `RENAME TABLE ${t} TO gone`),
      table.map((t) => `LOCK TABLES ${t} WRITE`),
      table.map((t) => `HANDLER ${t} OPEN`),
      table.map((t) => `LOAD DATA INFILE '/etc/passwd' INTO TABLE ${t}`),
      table.map((t) => `CREATE TABLE copy AS SELECT * FROM ${t}`),
      fc.constantFrom(
        'SET GLOBAL general_log = 1',
        "GRANT ALL ON *.* TO 'x'@'%'",
        'CALL p()',
        'DO SLEEP(10)',
        "PREPARE s FROM 'DROP TABLE orders'",
        'EXECUTE s',
        'FLUSH PRIVILEGES',
        'SHUTDOWN',
        'SELECT 1',
      ),
    );
    const casing = fc.constantFrom(
      (s: string) => s,
      (s: string) => s.toLowerCase(),
      (s: string) => [...s].map((c, i) => (i % 2 ? c.toLowerCase() : c.toUpperCase())).join(''),
    );
    const separator = fc.constantFrom(';', '; ', ' ;', ';\n', ';\t', ' ;\r\n ', ';;');
    const ending = fc.constantFrom('', ';', ' ; ', '\n');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...legit),
        separator,
        write,
        casing,
        ending,
        async (select, sep, stmt, cased, end) => {
          const sql = `${select.replace(/[\s;]+$/, '')}${sep}${cased(stmt)}${end}`;
          const verdict = await checkSelectOnly(sql);
          expect(verdict.ok, sql).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
