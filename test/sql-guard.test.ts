import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { checkSelectAst, checkSelectOnly, checkSelectText } from '../src/tools/sql-guard.js';
import type { SqlGuardVerdict } from '../src/tools/sql-guard.js';
import { lexSql } from '../src/tools/sql-guard-lexer.js';

function readLines(name: string): string[] {
  const text = readFileSync(new URL(`./corpora/${name}`, import.meta.url), 'utf8');
  return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

const hostile = [
  ...readLines('hostile-sql.txt'),
  ...(JSON.parse(
    readFileSync(new URL('./corpora/hostile-sql-multiline.json', import.meta.url), 'utf8'),
  ) as string[]),
];
const legit = readLines('legit-sql.txt');

const SALES_TABLES = ['customers', 'products', 'orders', 'order_items'];

function reasonOf(verdict: SqlGuardVerdict): string {
  if (verdict.ok) throw new Error(`expected a refusal, got ok with tables ${JSON.stringify(verdict.tables)}`);
  return verdict.reason;
}

const refusal = (sql: string, allowedTables?: readonly string[]): string =>
  reasonOf(checkSelectOnly(sql, allowedTables ? { allowedTables } : {}));

describe('corpora', () => {
  it('are big enough', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(200);
    expect(legit.length).toBeGreaterThanOrEqual(100);
  });

  it('refuses every hostile string, with a non-empty reason', () => {
    const passed = hostile.filter((sql) => checkSelectOnly(sql).ok);
    expect(passed, `hostile strings that passed the guard:\n${passed.join('\n')}`).toEqual([]);
    for (const sql of hostile) expect(refusal(sql).trim().length).toBeGreaterThan(10);
  });

  it('refuses every hostile string even when an allowlist names every table', () => {
    const allowedTables = [...SALES_TABLES, 'secret', 't', 'x', 'u', 'evil', 'seq', 'copy', 'orders_old'];
    const passed = hostile.filter((sql) => checkSelectOnly(sql, { allowedTables }).ok);
    expect(passed).toEqual([]);
  });

  it('passes every legitimate query and reports its tables', () => {
    const failures = legit
      .map((sql) => ({ sql, verdict: checkSelectOnly(sql) }))
      .filter(({ verdict }) => !verdict.ok)
      .map(({ sql, verdict }) => `${sql}\n  -> ${verdict.ok ? '' : verdict.reason}`);
    expect(failures, `legitimate queries that were refused:\n${failures.join('\n')}`).toEqual([]);
  });

  it('passes every legitimate query under the sales allowlist (qualified names listed as such)', () => {
    const allowedTables = [...SALES_TABLES, 'sales.customers', 'sales.orders'];
    const failures = legit.filter((sql) => !checkSelectOnly(sql, { allowedTables }).ok);
    expect(failures).toEqual([]);
  });

  it('refuses each hostile string by the AST layer alone unless the trick is lexical (comments, backslashes)', () => {
    // Defence in depth: the raw-text pass is not the only thing standing between the model and the server.
    const lexical = hostile.filter((sql) => !lexSql(sql).ok);
    const astPassed = hostile.filter((sql) => lexSql(sql).ok && checkSelectAst(sql).ok);
    expect(astPassed).toEqual([]);
    // ... and the lexical tricks are exactly what the text pass is for.
    for (const sql of lexical) expect(checkSelectText(sql)).toBeTruthy();
    expect(lexical.length).toBeGreaterThan(20);
  });

  it('passes every legitimate query through each layer separately', () => {
    expect(legit.filter((sql) => checkSelectText(sql) !== undefined)).toEqual([]);
    expect(legit.filter((sql) => !checkSelectAst(sql).ok)).toEqual([]);
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
    ['SELECT 1 -- note', /Comments are not allowed/],
    ['SELECT 1 # note', /Comments are not allowed/],
    ["SELECT 'a\\'b'", /Backslashes/],
    ['SELECT * FROM', /Could not parse the query as MySQL \(at the end/],
    ['SELECT 1 FROM orders PROCEDURE ANALYSE()', /Could not parse the query as MySQL \(near "/],
    ['', /empty/],
  ])('%s', (sql, pattern) => {
    expect(refusal(sql)).toMatch(pattern);
  });

  it('names the table that is outside the allowlist', () => {
    expect(refusal('SELECT * FROM orders JOIN secret ON 1 = 1', SALES_TABLES)).toMatch(
      /Table secret is not in the allowed tables: customers, products, orders, order_items/,
    );
  });
});

describe('what passes', () => {
  it('returns the tables referenced, in order, once each, without CTE names or DUAL', () => {
    expect(checkSelectOnly('SELECT 1')).toEqual({ ok: true, tables: [] });
    expect(checkSelectOnly('SELECT 1 FROM DUAL')).toEqual({ ok: true, tables: [] });
    expect(
      checkSelectOnly(
        'WITH r AS (SELECT customer_id, SUM(total) AS s FROM orders GROUP BY customer_id) ' +
          'SELECT c.name, r.s FROM r JOIN customers c ON c.id = r.customer_id ' +
          'WHERE c.id IN (SELECT customer_id FROM orders)',
      ),
    ).toEqual({ ok: true, tables: ['orders', 'customers'] });
    expect(checkSelectOnly('SELECT * FROM sales.orders')).toEqual({ ok: true, tables: ['sales.orders'] });
  });

  it('accepts one trailing semicolon and surrounding whitespace', () => {
    expect(checkSelectOnly('  SELECT 1;  \n').ok).toBe(true);
    expect(checkSelectOnly('SELECT 1\n;').ok).toBe(true);
  });

  it('accepts comment-, semicolon- and keyword-looking text inside string literals and quoted identifiers', () => {
    for (const sql of [
      "SELECT '/*! DROP TABLE orders */' AS s",
      "SELECT 'a -- b # c /* d */' AS s",
      "SELECT '; DELETE FROM orders; ' AS s",
      "SELECT 'it''s SLEEP(1) INTO OUTFILE @x FOR UPDATE mysql.user' AS s",
      'SELECT name FROM customers WHERE name = "a;b"',
      'SELECT `x;y` FROM customers',
    ]) {
      expect(checkSelectOnly(sql), sql).toMatchObject({ ok: true });
    }
  });
});

describe('allowlist', () => {
  const allowedTables = ['Customers', 'orders'];
  const ok = (sql: string): boolean => checkSelectOnly(sql, { allowedTables }).ok;

  it('compares table names case-insensitively', () => {
    expect(ok('SELECT * FROM customers JOIN ORDERS ON 1 = 1')).toBe(true);
    expect(ok('SELECT * FROM `orders`')).toBe(true);
  });

  it('refuses any table outside it, wherever it is referenced', () => {
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
      expect(ok(sql), sql).toBe(false);
    }
  });

  it('does not count CTE names as tables, within their scope only', () => {
    expect(ok('WITH secret AS (SELECT 1 AS a) SELECT * FROM secret')).toBe(true);
    expect(ok('WITH a AS (SELECT * FROM orders), b AS (SELECT * FROM a) SELECT * FROM b')).toBe(true);
    expect(
      ok('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 9) SELECT * FROM r'),
    ).toBe(true);
    expect(ok('WITH x AS (SELECT 1) SELECT * FROM orders UNION SELECT * FROM x')).toBe(true);
    // A non-recursive CTE body naming itself reads the real table of that name.
    expect(ok('WITH secret AS (SELECT * FROM secret) SELECT * FROM secret')).toBe(false);
    // A CTE cannot see the CTEs defined after it.
    expect(ok('WITH b AS (SELECT * FROM secret), secret AS (SELECT 1) SELECT * FROM b')).toBe(false);
    // Outside the subquery that defines it, the name is a table again.
    expect(ok('SELECT * FROM (WITH secret AS (SELECT 1) SELECT * FROM secret) a, secret')).toBe(false);
    // A CTE never shadows a schema-qualified table.
    expect(ok('WITH orders AS (SELECT 1) SELECT * FROM other_db.orders')).toBe(false);
  });

  it('fails closed on an empty allowlist, still allowing table-free queries', () => {
    expect(checkSelectOnly('SELECT * FROM orders', { allowedTables: [] }).ok).toBe(false);
    expect(checkSelectOnly('SELECT 1', { allowedTables: [] }).ok).toBe(true);
  });

  it('matches schema-qualified references only against schema-qualified entries', () => {
    expect(checkSelectOnly('SELECT * FROM sales.orders', { allowedTables: ['orders'] }).ok).toBe(false);
    expect(checkSelectOnly('SELECT * FROM sales.orders', { allowedTables: ['Sales.Orders'] }).ok).toBe(true);
  });
});

describe('properties', () => {
  it('never throws, whatever the input', () => {
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
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string(), sqlish), (sql) => {
        let verdict: SqlGuardVerdict | undefined;
        expect(() => {
          verdict = checkSelectOnly(sql);
        }).not.toThrow();
        expect(verdict).toBeDefined();
        if (verdict && !verdict.ok) expect(verdict.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: 1000 },
    );
  });

  it('does not throw on inputs that are not strings', () => {
    for (const value of [undefined, null, 42, {}, ['SELECT 1']]) {
      expect(checkSelectOnly(value as unknown as string).ok).toBe(false);
    }
  });

  it('refuses a legitimate SELECT with any write statement appended after a semicolon', () => {
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
    fc.assert(
      fc.property(
        fc.constantFrom(...legit),
        separator,
        write,
        casing,
        ending,
        (select, sep, stmt, cased, end) => {
          const sql = `${select.replace(/[\s;]+$/, '')}${sep}${cased(stmt)}${end}`;
          const verdict = checkSelectOnly(sql);
          expect(verdict.ok, sql).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
