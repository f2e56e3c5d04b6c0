// The demo's sales data (pure) and its seeding into a real MariaDB/MySQL: this file seeds its own database
// af_test_data_<random> with its own reader af_r_<random> and drops both at the end. With no server the
// seeding tests fail; none is skipped.
import { randomBytes } from 'node:crypto';
import { createConnection, createPool } from 'mysql2/promise';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_SALES_SEED,
  REFERENCE_SQL,
  expectedTopCustomers,
  generateSalesData,
  mulberry32,
} from '../../../src/demo/sales-data.js';
import { seedDemoDatabase } from '../../../src/demo/seed-demo-database.js';
import { quoteIdentifier } from '../../../src/store/pool.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const SUFFIX = randomBytes(4).toString('hex');
const DATABASE = `af_test_data_${SUFFIX}`;
const READER = `af_r_${SUFFIX}`;
const READER_PASSWORD = `pw_${randomBytes(6).toString('hex')}`;

const data = generateSalesData();

function cents(decimal: string): number {
  const [whole = '0', fraction = '00'] = decimal.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

describe('generateSalesData', () => {
  it('is deterministic: the same seed gives the same rows, another seed other rows', () => {
    expect(generateSalesData(DEFAULT_SALES_SEED)).toEqual(data);
    expect(generateSalesData(7).orders).not.toEqual(data.orders);
    const a = mulberry32(42);
    const b = mulberry32(42);
    const draws = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(draws);
    for (const value of draws) expect(value).toBeGreaterThanOrEqual(0);
    for (const value of draws) expect(value).toBeLessThan(1);
  });

  it('has the documented shape and size', () => {
    expect(data.customers).toHaveLength(200);
    expect(data.products).toHaveLength(40);
    expect(data.orders.length).toBeGreaterThan(2_900);
    expect(data.orders.length).toBeLessThan(3_200);
    expect(data.orderItems.length).toBeGreaterThan(data.orders.length);
    expect(Object.keys(data.customers[0] ?? {})).toEqual(['id', 'name', 'email', 'country', 'created_at']);
    expect(Object.keys(data.products[0] ?? {})).toEqual(['id', 'name', 'category', 'price']);
    expect(Object.keys(data.orders[0] ?? {})).toEqual(['id', 'customer_id', 'order_date', 'status', 'total']);
    expect(Object.keys(data.orderItems[0] ?? {})).toEqual([
      'id',
      'order_id',
      'product_id',
      'quantity',
      'unit_price',
    ]);
  });

  it('gives every customer a unique name and a unique address at example.com', () => {
    expect(new Set(data.customers.map((c) => c.name)).size).toBe(data.customers.length);
    expect(new Set(data.customers.map((c) => c.email)).size).toBe(data.customers.length);
    for (const customer of data.customers) expect(customer.email).toMatch(/^[a-z.]+@example\.com$/);
  });

  it('dates orders across 2023 and 2024, mostly completed, never before the customer signed up', () => {
    const byId = new Map(data.customers.map((c) => [c.id, c]));
    const statuses = new Map<string, number>();
    for (const order of data.orders) {
      expect(order.order_date >= '2023-01-01' && order.order_date <= '2024-12-31').toBe(true);
      expect(order.order_date >= (byId.get(order.customer_id)?.created_at.slice(0, 10) ?? '')).toBe(true);
      statuses.set(order.status, (statuses.get(order.status) ?? 0) + 1);
    }
    expect(data.orders.some((o) => o.order_date.startsWith('2023'))).toBe(true);
    expect(data.orders.some((o) => o.order_date.startsWith('2024'))).toBe(true);
    expect([...statuses.keys()].sort()).toEqual(['cancelled', 'completed', 'refunded']);
    expect(statuses.get('completed') ?? 0).toBeGreaterThan(data.orders.length * 0.8);
    // Ids grow with the date, as auto-increment ids of a shop would.
    for (let i = 1; i < data.orders.length; i++) {
      expect((data.orders[i]?.order_date ?? '') >= (data.orders[i - 1]?.order_date ?? '')).toBe(true);
    }
  });

  it('makes every order total the sum of its items, at each item the product price', () => {
    const price = new Map(data.products.map((p) => [p.id, p.price]));
    const sums = new Map<number, number>();
    for (const item of data.orderItems) {
      expect(item.unit_price).toBe(price.get(item.product_id));
      expect(item.quantity).toBeGreaterThan(0);
      sums.set(item.order_id, (sums.get(item.order_id) ?? 0) + item.quantity * cents(item.unit_price));
    }
    for (const order of data.orders) {
      expect(order.total).toMatch(/^\d+\.\d\d$/);
      expect(cents(order.total)).toBe(sums.get(order.id));
    }
  });

  it('has a clear, unique top 3 by completed Q1 2024 sales', () => {
    const top = expectedTopCustomers(data, 4);
    expect(top).toHaveLength(4);
    const [a, b, c, d] = top.map((t) => cents(t.total)) as [number, number, number, number];
    expect(a).toBeGreaterThan(b);
    expect(b).toBeGreaterThan(c);
    expect(c).toBeGreaterThan(d);
    // Clear, not by a cent: each of the three leads the next by more than 10%.
    expect(c).toBeGreaterThan(d * 1.1);
    expect(b).toBeGreaterThan(c * 1.1);
    expect(a).toBeGreaterThan(b * 1.1);
    expect(expectedTopCustomers(data, 3)).toEqual(top.slice(0, 3));
  });

  it('computes the top customers from whatever rows it is given', () => {
    const customers = data.customers.slice(0, 3);
    const [x, y, z] = customers as [(typeof customers)[0], (typeof customers)[0], (typeof customers)[0]];
    const orders = [
      { id: 1, customer_id: x.id, order_date: '2024-01-01', status: 'completed' as const, total: '10.00' },
      { id: 2, customer_id: y.id, order_date: '2024-03-31', status: 'completed' as const, total: '20.00' },
      { id: 3, customer_id: x.id, order_date: '2024-04-01', status: 'completed' as const, total: '99.00' },
      { id: 4, customer_id: z.id, order_date: '2024-02-01', status: 'refunded' as const, total: '99.00' },
      { id: 5, customer_id: x.id, order_date: '2024-02-10', status: 'completed' as const, total: '15.50' },
    ];
    expect(expectedTopCustomers({ customers, orders }, 5)).toEqual([
      { id: x.id, name: x.name, email: x.email, total: '25.50' },
      { id: y.id, name: y.name, email: y.email, total: '20.00' },
    ]);
  });
});

describe('seedDemoDatabase (real server)', () => {
  let root: Pool;
  const adminUrl = SERVER;
  let setupError: unknown;

  beforeAll(async () => {
    const url = new URL(SERVER);
    root = createPool({
      host: url.hostname,
      port: Number(url.port || 3306),
      user: decodeURIComponent(url.username) || 'root',
      password: decodeURIComponent(url.password),
      connectionLimit: 2,
    });
    await root.query('SELECT 1').catch((error: unknown) => {
      setupError = error;
    });
  });

  // A failed beforeAll only marks tests skipped; rethrown per test, a missing server is a failure.
  beforeEach(() => {
    if (setupError !== undefined) throw setupError;
  });

  afterAll(async () => {
    if (setupError !== undefined) {
      await root?.end();
      return;
    }
    await root?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await root?.query('DROP USER IF EXISTS ?@?', [READER, '%']);
    await root?.end();
  });

  function connect(database?: string, user?: string, password?: string) {
    const url = new URL(SERVER);
    return createConnection({
      host: url.hostname,
      port: Number(url.port || 3306),
      user: user ?? (decodeURIComponent(url.username) || 'root'),
      password: password ?? decodeURIComponent(url.password),
      ...(database ? { database } : {}),
    });
  }

  async function scalar(sql: string): Promise<unknown> {
    const [rows] = await root.query<RowDataPacket[]>({ sql, rowsAsArray: true });
    return (rows as unknown as unknown[][])[0]?.[0];
  }

  it('creates the tables with every row, consistent totals and the reference answer', async () => {
    const result = await seedDemoDatabase({
      adminUrl,
      database: DATABASE,
      readerUser: READER,
      readerPassword: READER_PASSWORD,
    });
    expect(result).toEqual({
      database: DATABASE,
      rows: {
        customers: data.customers.length,
        products: data.products.length,
        orders: data.orders.length,
        orderItems: data.orderItems.length,
      },
      reseeded: true,
    });
    const db = quoteIdentifier(DATABASE);
    expect(Number(await scalar(`SELECT COUNT(*) FROM ${db}.customers`))).toBe(data.customers.length);
    expect(Number(await scalar(`SELECT COUNT(*) FROM ${db}.order_items`))).toBe(data.orderItems.length);
    expect(
      Number(
        await scalar(
          `SELECT COUNT(*) FROM ${db}.orders o WHERE o.total <> ` +
            `(SELECT SUM(i.quantity * i.unit_price) FROM ${db}.order_items i WHERE i.order_id = o.id)`,
        ),
      ),
    ).toBe(0);
    const conn = await connect(DATABASE);
    try {
      const [rows] = await conn.query<RowDataPacket[]>(REFERENCE_SQL);
      const answer = rows.map((r) => ({
        id: r['id'],
        name: r['name'],
        email: r['email'],
        total: r['q1_sales'],
      }));
      expect(answer).toEqual(expectedTopCustomers(data, 3));
    } finally {
      await conn.end();
    }
  });

  it('gives the reader SELECT on this database and nothing else', async () => {
    const [grants] = await root.query<RowDataPacket[]>({ sql: 'SHOW GRANTS FOR ?@?', rowsAsArray: true }, [
      READER,
      '%',
    ]);
    const lines = (grants as unknown as string[][]).map((row) =>
      String(row[0]).replace(/ IDENTIFIED BY.*$/, ''),
    );
    expect(lines.sort()).toEqual([
      `GRANT SELECT ON \`${DATABASE}\`.* TO \`${READER}\`@\`%\``,
      `GRANT USAGE ON *.* TO \`${READER}\`@\`%\``,
    ]);
    const reader = await connect(DATABASE, READER, READER_PASSWORD);
    try {
      const [rows] = await reader.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM products');
      expect(Number(rows[0]?.['n'])).toBe(data.products.length);
      await expect(reader.query('DELETE FROM products')).rejects.toThrow(/denied/i);
    } finally {
      await reader.end();
    }
  });

  it('is idempotent and fast on a second run, and rebuilds when the data was changed', async () => {
    // Someone widened the reader's rights and changed its password in between: both are put back.
    await root.query(`GRANT INSERT ON ${quoteIdentifier(DATABASE)}.* TO ?@?`, [READER, '%']);
    await root.query('ALTER USER ?@? IDENTIFIED BY ?', [READER, '%', 'changed-meanwhile']);
    const started = Date.now();
    const again = await seedDemoDatabase({
      adminUrl,
      database: DATABASE,
      readerUser: READER,
      readerPassword: READER_PASSWORD,
    });
    expect(again.reseeded).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
    const [grants] = await root.query<RowDataPacket[]>({ sql: 'SHOW GRANTS FOR ?@?', rowsAsArray: true }, [
      READER,
      '%',
    ]);
    expect((grants as unknown as string[][]).some((row) => /INSERT/.test(String(row[0])))).toBe(false);
    const reader = await connect(DATABASE, READER, READER_PASSWORD);
    await reader.end();

    const db = quoteIdentifier(DATABASE);
    await root.query(`DELETE FROM ${db}.order_items WHERE id = 1`);
    const rebuilt = await seedDemoDatabase({
      adminUrl,
      database: DATABASE,
      readerUser: READER,
      readerPassword: READER_PASSWORD,
    });
    expect(rebuilt.reseeded).toBe(true);
    expect(Number(await scalar(`SELECT COUNT(*) FROM ${db}.order_items`))).toBe(data.orderItems.length);
  });

  it('seeds once when several processes start together (a fresh machine, --processes N)', async () => {
    const db = quoteIdentifier(DATABASE);
    await root.query(`DELETE FROM ${db}.order_items WHERE id = 1`);
    const seeds = await Promise.all(
      [0, 1, 2].map(() =>
        seedDemoDatabase({
          adminUrl,
          database: DATABASE,
          readerUser: READER,
          readerPassword: READER_PASSWORD,
        }),
      ),
    );
    expect(seeds.filter((seed) => seed.reseeded)).toHaveLength(1);
    expect(Number(await scalar(`SELECT COUNT(*) FROM ${db}.order_items`))).toBe(data.orderItems.length);
  });

  it('refuses to turn root or the admin account into the reader', async () => {
    await expect(seedDemoDatabase({ adminUrl, database: DATABASE, readerUser: 'root' })).rejects.toThrow(
      /own user/,
    );
  });
});
