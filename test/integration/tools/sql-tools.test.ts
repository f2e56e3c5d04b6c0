// The three data tools as the agent runs them (ToolRegistry + runToolCall, never execute directly), against
// the real MariaDB/MySQL of MYSQL_URL's server. This file seeds its own database af_test_data_<random> with its
// own reader af_r_<random> and drops both at the end. With no server every test fails; none is skipped.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REFERENCE_SQL, expectedTopCustomers, generateSalesData } from '../../../src/demo/sales-data.js';
import { countToolsTokens, tokenCounterFor } from '../../../src/kernel/tokens.js';
import { quoteIdentifier } from '../../../src/store/pool.js';
import { openDataDatabase, type DataDatabase } from '../../../src/tools/data-database.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { runToolCall, type ToolCallOutcome } from '../../../src/kernel/run-tool-call.js';
import { checkSelectOnly } from '../../../src/tools/sql-guard.js';
import { createSqlTools } from '../../../src/tools/sql-tools.js';
import { join } from 'node:path';
import { CORPORA_DIR } from '../../support/repo-paths.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';

const seeded = new SeededDataDatabase('data');
const {
  database: DATABASE,
  reader: READER,
  readerPassword: READER_PASSWORD,
  host: HOST,
  port: PORT,
} = seeded;
const SERVER = seeded.server;
const SUFFIX = randomBytes(4).toString('hex');
const RUN_OPTIONS = { defaultTimeoutMs: 10_000, transientRetries: 2, retryBaseDelayMs: 10 };

const data = generateSalesData();

let root: Pool;
let db: DataDatabase;
let registry: ToolRegistry;
let setupError: unknown;

beforeAll(async () => {
  try {
    await setUp();
  } catch (error) {
    setupError = error;
  }
});

// A failed beforeAll only marks tests skipped; rethrown per test, a missing server is a failure.
beforeEach(() => {
  if (setupError !== undefined) throw setupError;
});

async function setUp(): Promise<void> {
  await seeded.seed();
  root = seeded.rootPool();
  db = await openDataDatabase(seeded.readerUrl());
  registry = new ToolRegistry(createSqlTools(db));
}

afterAll(async () => {
  await db?.close();
  if (setupError !== undefined) {
    await root?.end();
    return;
  }
  if (root) await seeded.drop(root);
  await root?.end();
});

function call(
  name: string,
  value: unknown,
  on: ToolRegistry = registry,
  signal: AbortSignal = new AbortController().signal,
): Promise<ToolCallOutcome> {
  return runToolCall(
    on,
    { name, args: { ok: true, value } },
    { signal, runId: `test-${SUFFIX}`, callKey: `test-${SUFFIX}:1:0`, step: 1 },
    RUN_OPTIONS,
  );
}

function corpusLines(file: string): string[] {
  return readFileSync(join(CORPORA_DIR, file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

/** Data lines of a rendered result: everything between the header and an optional "(…)" footer. */
function dataLines(output: string): string[] {
  return output
    .split('\n')
    .slice(1)
    .filter((line) => !/^\(.*\)$/.test(line));
}

describe('sql_query', () => {
  // The legit corpus was written for the guard over this schema. Two kinds of line cannot run as written:
  // it names the database `sales` (here it is af_test_data_<random>, so the name is substituted), and one
  // line selects a column `order items` that no sensible sales schema has: it must fail with the server's
  // message, which is what the model would read.
  const EXPECTED_FAILURES = new Map([
    ['SELECT `order items` FROM customers', /Unknown column 'order items'/],
  ]);

  it(
    'runs every query of the legit corpus and returns rows or an empty result',
    { timeout: 60_000 },
    async () => {
      let withRows = 0;
      for (const line of corpusLines('legit-sql.txt')) {
        const sql = line.replace(/\bsales\./g, `${DATABASE}.`);
        const outcome = await call('sql_query', { sql });
        expect(outcome.output.length, sql).toBeLessThanOrEqual(4_000);
        const failure = EXPECTED_FAILURES.get(line);
        if (failure) {
          expect(outcome, sql).toMatchObject({ ok: false, errorCode: 'sql_error' });
          expect(outcome.output).toMatch(/^Error: /);
          expect(outcome.output).toMatch(failure);
          continue;
        }
        expect(outcome.ok, `${sql}\n${outcome.output}`).toBe(true);
        expect(outcome.output).not.toMatch(/^Error/);
        if (!outcome.output.endsWith('(no rows)')) withRows += 1;
      }
      expect(withRows).toBeGreaterThan(100);
    },
  );

  it('answers the reference question with exactly the expected top 3', async () => {
    const expected = expectedTopCustomers(data, 3);
    const outcome = await call('sql_query', { sql: REFERENCE_SQL });
    expect(outcome.ok).toBe(true);
    expect(outcome.output).toBe(
      [
        'id | name | email | q1_sales',
        ...expected.map((c) => `${c.id} | ${c.name} | ${c.email} | ${c.total}`),
      ].join('\n'),
    );

    // The way a model might phrase it instead: half-open date range, grouped by id, names only.
    const variant = await call('sql_query', {
      sql:
        'SELECT c.name, SUM(o.total) AS sales FROM orders o JOIN customers c ON c.id = o.customer_id ' +
        "WHERE o.status = 'completed' AND o.order_date >= '2024-01-01' AND o.order_date < '2024-04-01' " +
        'GROUP BY c.id, c.name ORDER BY sales DESC LIMIT 3',
    });
    expect(dataLines(variant.output)).toEqual(expected.map((c) => `${c.name} | ${c.total}`));
  });

  it(
    'runs the unusual analytics corpus, bar the few the guard refuses (at most 3%)',
    { timeout: 60_000 },
    async () => {
      const lines = corpusLines('legit-sql-analytics.txt');
      const refused: string[] = [];
      for (const sql of lines) {
        const outcome = await call('sql_query', { sql });
        if (outcome.errorCode === 'sql_refused') {
          refused.push(sql);
          continue;
        }
        // The server runs the query as the guard checked it: a trailing comment is already cut off.
        expect(outcome.ok, `${sql}\n${outcome.output}`).toBe(true);
      }
      expect(refused.length / lines.length).toBeLessThanOrEqual(0.03);
    },
  );

  it('refuses every hostile query with the guard reason, as an observation', async () => {
    const multiline = JSON.parse(
      readFileSync(join(CORPORA_DIR, 'hostile-sql-multiline.json'), 'utf8'),
    ) as string[];
    for (const sql of [...corpusLines('hostile-sql.txt'), ...multiline]) {
      const verdict = await checkSelectOnly(sql);
      expect(verdict.ok, sql).toBe(false);
      const outcome = await call('sql_query', { sql });
      expect(outcome, sql).toMatchObject({ ok: false, errorCode: 'sql_refused', attempts: 1 });
      if (!verdict.ok) expect(outcome.output).toBe(`Error: ${verdict.reason}`);
    }
    const [rows] = await root.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM ${quoteIdentifier(DATABASE)}.orders`,
    );
    expect(Number(rows[0]?.['n'])).toBe(data.orders.length);
  });

  it('shows at most 10 rows and says how many there were', async () => {
    const outcome = await call('sql_query', { sql: 'SELECT * FROM order_items ORDER BY id' });
    const lines = outcome.output.split('\n');
    expect(lines[0]).toBe('id | order_id | product_id | quantity | unit_price');
    expect(lines).toHaveLength(12);
    const first = data.orderItems[0];
    expect(lines[1]).toBe(
      `1 | ${first?.order_id} | ${first?.product_id} | ${first?.quantity} | ${first?.unit_price}`,
    );
    expect(lines.at(-1)).toBe(`(showing 10 of ${data.orderItems.length} rows)`);

    const dates = await call('sql_query', {
      sql: 'SELECT order_date, created_at FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id LIMIT 1',
    });
    const order = data.orders[0];
    const customer = data.customers.find((c) => c.id === order?.customer_id);
    expect(dataLines(dates.output)).toEqual([`${order?.order_date} | ${customer?.created_at}`]);
  });

  it('keeps observations small: long values cut, the whole under 4,000 characters', async () => {
    const wide = await call('sql_query', {
      sql: 'SELECT name, REPEAT(email, 40) AS long_text FROM customers ORDER BY id',
    });
    expect(wide.ok).toBe(true);
    expect(wide.output.length).toBeLessThanOrEqual(4_000);
    expect(wide.output).toMatch(/…\(\+\d+ chars\)/);
    expect(wide.output.split('\n').at(-1)).toMatch(/^\(showing \d+ of 200 rows\)$/);

    const one = await call('sql_query', {
      sql: 'SELECT GROUP_CONCAT(name ORDER BY id) AS names FROM customers',
    });
    expect(dataLines(one.output)[0]).toMatch(/^[^\n]{200}…\(\+\d+ chars\)$/);
  });

  it('cuts a result past SQL_MAX_RESULT_BYTES and tells the model why', async () => {
    const huge = await call('sql_query', { sql: "SELECT id, REPEAT('x', 16000000) AS big FROM orders" });
    expect(huge.ok).toBe(true);
    expect(huge.output).toBe(
      `id | big\n(showing 0 of ${data.orders.length} rows; result cut at 1048576 bytes: select fewer or shorter columns)`,
    );
    // What fits is shown: four rows of 300 KB (the rendering then shortens each value).
    const some = await call('sql_query', {
      sql: "SELECT id, REPEAT('x', 300000) AS big FROM orders ORDER BY id",
    });
    expect(dataLines(some.output).map((line) => line.split(' | ')[0])).toEqual(['1', '2', '3']);
    expect(some.output.split('\n').at(-1)).toMatch(/^\(showing 3 of \d+ rows; result cut at 1048576 bytes/);
  });

  it('reports SQL errors with the server message so the model can fix them', async () => {
    const outcome = await call('sql_query', { sql: 'SELECT totl FROM orders' });
    expect(outcome).toMatchObject({ ok: false, errorCode: 'sql_error' });
    expect(outcome.output).toMatch(/^Error: Unknown column 'totl'/);
    expect(outcome.output).not.toContain(READER_PASSWORD);
  });

  it('stops a query that runs too long, and one the run cancels', async () => {
    const slow = new ToolRegistry(createSqlTools(db, { timeoutMs: 300 }));
    const heavy =
      'SELECT COUNT(*) FROM order_items a CROSS JOIN order_items b CROSS JOIN order_items c WHERE a.id + b.id = c.id';
    const started = Date.now();
    const timedOut = await call('sql_query', { sql: heavy }, slow);
    expect(timedOut).toMatchObject({ ok: false, errorCode: 'query_timeout' });
    expect(timedOut.output).toMatch(/longer than 0\.3 s/);
    expect(Date.now() - started).toBeLessThan(3_000);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const cancelled = await call('sql_query', { sql: heavy }, registry, controller.signal);
    expect(cancelled).toMatchObject({ ok: false, errorCode: 'aborted' });
    // The runner stops waiting at once; the tool still kills the query on the server.
    let running = -1;
    for (let i = 0; i < 60 && running !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [rows] = await root.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND = 'Query' AND INFO LIKE '%CROSS JOIN%'",
        [READER],
      );
      running = Number(rows[0]?.['n']);
    }
    expect(running).toBe(0);
  });
});

describe('list_tables and describe_table', () => {
  it('lists the tables with their columns', async () => {
    const outcome = await call('list_tables', {});
    expect(outcome).toMatchObject({ ok: true });
    expect(outcome.output).toBe(
      [
        'customers(id, name, email, country, created_at)',
        'order_items(id, order_id, product_id, quantity, unit_price)',
        'orders(id, customer_id, order_date, status, total)',
        'products(id, name, category, price)',
      ].join('\n'),
    );
  });

  it('describes a table: types, keys, foreign keys', async () => {
    const outcome = await call('describe_table', { table: 'orders' });
    expect(outcome.ok).toBe(true);
    // MySQL 8 drops the display width of integer types; MariaDB keeps it.
    expect(outcome.output.replace(/int\(\d+\)/g, 'int')).toBe(
      [
        'orders:',
        'id int unsigned, primary key',
        'customer_id int unsigned, indexed, references customers.id',
        'order_date date, indexed',
        'status varchar(16)',
        'total decimal(12,2)',
      ].join('\n'),
    );
    expect((await call('describe_table', { table: 'ORDER_ITEMS' })).output).toMatch(/^order_items:/);
    expect((await call('describe_table', { table: '`products`' })).output).toMatch(/^products:\nid int/);
  });

  it('names the real tables when asked about an unknown one', async () => {
    const outcome = await call('describe_table', { table: 'invoices' });
    expect(outcome).toMatchObject({ ok: false, errorCode: 'unknown_table' });
    expect(outcome.output).toBe(
      'Error: No table named "invoices". Tables: customers, order_items, orders, products.',
    );
    const invalid = await call('describe_table', {});
    expect(invalid).toMatchObject({ ok: false, errorCode: 'invalid_arguments' });
  });

  it('honours an allowlist in all three tools', async () => {
    const limited = new ToolRegistry(createSqlTools(db, { allowedTables: ['customers', 'orders'] }));
    const refused = await call('sql_query', { sql: 'SELECT * FROM products' }, limited);
    expect(refused).toMatchObject({ ok: false, errorCode: 'sql_refused' });
    expect(refused.output).toMatch(/products is not in the allowed tables: customers, orders/);
    expect((await call('sql_query', { sql: 'SELECT COUNT(*) FROM customers' }, limited)).output).toBe(
      'COUNT(*)\n200',
    );
    expect((await call('list_tables', {}, limited)).output).toBe(
      'customers(id, name, email, country, created_at)\norders(id, customer_id, order_date, status, total)',
    );
    const hidden = await call('describe_table', { table: 'products' }, limited);
    expect(hidden).toMatchObject({ ok: false, errorCode: 'unknown_table' });
    expect(hidden.output).toMatch(/Tables: customers, orders\.$/);
  });
});

describe('list_tables and describe_table on a very wide schema', () => {
  // 250 views (t000…t249: a view is much quicker to create than a table) and a table of 500 columns, in a
  // database of their own the reader may read.
  const WIDE = `af_test_wide_${SUFFIX}`;
  let wide: DataDatabase;
  let wideTools: ToolRegistry;

  beforeAll(async () => {
    if (setupError !== undefined) return;
    const admin = await createConnection({
      host: HOST,
      port: PORT,
      user: decodeURIComponent(SERVER.username) || 'root',
      password: decodeURIComponent(SERVER.password),
      multipleStatements: true,
    });
    try {
      const db = quoteIdentifier(WIDE);
      const tables = Array.from(
        { length: 250 },
        (_, i) => `CREATE VIEW ${db}.t${String(i).padStart(3, '0')} AS SELECT 1 AS id, 'x' AS label;`,
      );
      const columns = Array.from({ length: 500 }, (_, i) => `c${i} INT`).join(', ');
      await admin.query(
        `CREATE DATABASE ${db}; ${tables.join(' ')} CREATE TABLE ${db}.very_wide (${columns}) ENGINE=MEMORY; ` +
          `GRANT SELECT ON ${db}.* TO '${READER}'@'%';`,
      );
    } finally {
      await admin.end();
    }
    wide = await openDataDatabase(`mysql://${READER}:${READER_PASSWORD}@${HOST}:${PORT}/${WIDE}`);
    wideTools = new ToolRegistry(createSqlTools(wide));
  }, 120_000);

  afterAll(async () => {
    await wide?.close();
    await root?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(WIDE)}`);
  }, 60_000);

  it('lists what fits and says how many tables are not shown', async () => {
    const outcome = await call('list_tables', {}, wideTools);
    expect(outcome.ok).toBe(true);
    expect(outcome.output.length).toBeLessThanOrEqual(4_000);
    const lines = outcome.output.split('\n');
    expect(lines[0]).toBe('t000(id, label) view');
    expect(lines.at(-1)).toBe(
      `(showing ${lines.length - 1} of more than 200 tables; describe_table gives any table's columns)`,
    );
  });

  it('describes a table of 500 columns with the first 300, and lists it with the first 40', async () => {
    const described = await call('describe_table', { table: 'very_wide' }, wideTools);
    const lines = described.output.split('\n');
    expect(lines[0]).toBe('very_wide:');
    expect(lines[1]).toMatch(/^c0 int/);
    expect(lines).toHaveLength(302);
    expect(lines.at(-1)).toBe('(only the first 300 columns are shown)');
    const summary = (await wide.listTables({ only: ['very_wide'] }))[0];
    expect(summary?.columns).toHaveLength(40);
    expect(summary?.moreColumns).toBe(true);
  });

  it('names at most 50 tables when asked about an unknown one', async () => {
    const outcome = await call('describe_table', { table: 'invoices' }, wideTools);
    expect(outcome.errorCode).toBe('unknown_table');
    expect(outcome.output).toMatch(/Tables: t000, t001, .*, t049, …\.$/);
  });
});

describe('tool definitions', () => {
  it('are short: under 40 words each and about 180 tokens together', () => {
    for (const spec of registry.specs) {
      expect(spec.function.description.split(/\s+/).length, spec.function.name).toBeLessThan(40);
    }
    expect(registry.names).toEqual(['sql_query', 'list_tables', 'describe_table']);
    const tokens = countToolsTokens(registry.specs, tokenCounterFor('gpt-4-turbo-preview'));
    expect(tokens).toBeLessThan(220);
    expect(registry.specs[0]?.function.description).toMatch(/one read-only SELECT \(MySQL dialect\)/);
    expect(registry.specs[0]?.function.description).toMatch(/At most 10 rows/);
  });
});
