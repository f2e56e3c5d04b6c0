// Creates the demo's data database (the sales schema of sales-data.ts) and the read-only account the SQL tools
// use (DATA_MYSQL_URL). Idempotent and fast when nothing changed: the four tables carry a comment naming the
// seed version and a fingerprint of the generated rows, written only after every row is in; when all four
// comments and row counts match, the data is left alone. Otherwise the four tables are dropped and rebuilt
// (a crashed seed leaves no marker, so the next run rebuilds); one process at a time, under a named lock. The
// account is (re)configured on every run: password, then every privilege revoked, then SELECT on this one
// database only.
import { createHash } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { ConfigError } from '../kernel/errors.js';
import { parseMysqlUrl } from '../store/mysql-url.js';
import { namedLockName, takeNamedLock } from '../store/named-lock.js';
import { quoteIdentifier } from '../store/pool.js';
import { generateSalesData, type SalesData } from './sales-data.js';

export interface SeedDemoOptions {
  /** An account that may create databases and users and grant SELECT, e.g. root. Its path is ignored. */
  adminUrl: string;
  database?: string;
  readerUser?: string;
  readerPassword?: string;
  readerHost?: string;
  /** Generator seed; the default gives the demo's data. */
  seed?: number;
}

export interface SeedDemoResult {
  database: string;
  rows: { customers: number; products: number; orders: number; orderItems: number };
  /** False when the tables already held this exact data and were left alone. */
  reseeded: boolean;
}

/** Bump when the table definitions change: the marker then no longer matches and the tables are rebuilt. */
const SCHEMA_VERSION = 1;
/** How long a process waits for another one's seeding of the same database (it takes seconds). */
const SEED_LOCK_SECONDS = 120;
/** Rows per INSERT: well under max_allowed_packet (~60 bytes a row), few round trips. */
const INSERT_CHUNK = 1_000;

// Parents before children for CREATE, children first for DROP (foreign keys).
const TABLES = ['customers', 'products', 'orders', 'order_items'] as const;

const DDL: Record<(typeof TABLES)[number], string> = {
  customers: `CREATE TABLE customers (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  email VARCHAR(190) NOT NULL,
  country CHAR(2) NOT NULL,
  created_at DATETIME NOT NULL,
  UNIQUE KEY uq_customers_name (name),
  UNIQUE KEY uq_customers_email (email),
  KEY ix_customers_country (country)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
  products: `CREATE TABLE products (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  category VARCHAR(40) NOT NULL,
  price DECIMAL(10,2) NOT NULL,
  UNIQUE KEY uq_products_name (name),
  KEY ix_products_category (category)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
  orders: `CREATE TABLE orders (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  order_date DATE NOT NULL,
  status VARCHAR(16) NOT NULL,
  total DECIMAL(12,2) NOT NULL,
  KEY ix_orders_customer (customer_id),
  KEY ix_orders_date_status (order_date, status),
  CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
  order_items: `CREATE TABLE order_items (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  order_id INT UNSIGNED NOT NULL,
  product_id INT UNSIGNED NOT NULL,
  quantity INT UNSIGNED NOT NULL,
  unit_price DECIMAL(10,2) NOT NULL,
  KEY ix_order_items_order (order_id),
  KEY ix_order_items_product (product_id),
  CONSTRAINT fk_order_items_order FOREIGN KEY (order_id) REFERENCES orders (id),
  CONSTRAINT fk_order_items_product FOREIGN KEY (product_id) REFERENCES products (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
};

export async function seedDemoDatabase(options: SeedDemoOptions): Promise<SeedDemoResult> {
  const database = options.database ?? 'agent_fleet_demo';
  const readerUser = options.readerUser ?? 'agent_reader';
  const readerPassword = options.readerPassword ?? 'agent_reader';
  const readerHost = options.readerHost ?? '%';
  const admin = adminTarget(options.adminUrl);
  // REVOKE ALL below would strip the admin (or root) of its own privileges: refuse before touching anything.
  if (readerUser === '' || readerUser === 'root' || readerUser === admin.user) {
    throw new ConfigError(
      'bad_reader_account',
      `The read-only account must be its own user, not "${readerUser || '(empty)'}"`,
    );
  }

  const data = generateSalesData(options.seed);
  const rows = {
    customers: data.customers.length,
    products: data.products.length,
    orders: data.orders.length,
    orderItems: data.orderItems.length,
  };
  const marker = seedMarker(data);

  const connection = await createConnection({
    host: admin.host,
    port: admin.port,
    user: admin.user,
    password: admin.password,
    connectTimeout: 10_000,
    charset: 'UTF8MB4_UNICODE_CI',
    timezone: 'Z',
    multipleStatements: false,
  }).catch((error: unknown) => {
    let reason = describe(error);
    if (admin.password !== '') reason = reason.replaceAll(admin.password, '***');
    // MariaDB may still be starting: retryable, so a supervised worker is started again rather than given up on.
    throw new ConfigError('seed_connect', `MYSQL_URL=${admin.redacted}: cannot connect (${reason})`, {
      retryable: true,
    });
  });
  try {
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
    await connection.query(`USE ${quoteIdentifier(database)}`);
    // Workers started together on a fresh machine (`--processes N`) would each rebuild the tables under the
    // others' inserts: one seeds, the rest wait and find the data current. Freed when the connection ends.
    if (!(await takeNamedLock(connection, namedLockName(database, 'seed'), SEED_LOCK_SECONDS))) {
      throw new ConfigError(
        'seed_lock_timeout',
        `another process was seeding ${database} for ${SEED_LOCK_SECONDS}s; is it stuck?`,
        { retryable: true },
      );
    }
    // Dates are written as text, but keep the session in UTC so nothing the server derives shifts them.
    await connection.query("SET SESSION time_zone = '+00:00'");
    const current = await isCurrent(connection, database, marker, data);
    if (!current) await rebuild(connection, data, marker);
    await configureReader(connection, database, readerUser, readerPassword, readerHost);
    return { database, rows, reseeded: !current };
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/** The marker written as the tables' comment: schema version plus a hash of every generated row. */
function seedMarker(data: SalesData): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([data.customers, data.products, data.orders, data.orderItems]))
    .digest('hex')
    .slice(0, 16);
  return `agent-fleet demo v${SCHEMA_VERSION} seed ${data.seed} ${hash}`;
}

async function isCurrent(
  connection: Connection,
  database: string,
  marker: string,
  data: SalesData,
): Promise<boolean> {
  const [tables] = await connection.query<RowDataPacket[]>(
    'SELECT TABLE_NAME AS name, TABLE_COMMENT AS comment FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?',
    [database],
  );
  const comments = new Map(tables.map((row) => [String(row['name']), String(row['comment'])]));
  if (!TABLES.every((table) => comments.get(table) === marker)) return false;
  // Exact counts are cheap at this size and catch rows someone added or deleted by hand since.
  const [counts] = await connection.query<RowDataPacket[]>(
    'SELECT (SELECT COUNT(*) FROM customers) AS c, (SELECT COUNT(*) FROM products) AS p, ' +
      '(SELECT COUNT(*) FROM orders) AS o, (SELECT COUNT(*) FROM order_items) AS i',
  );
  const row = counts[0];
  return (
    row !== undefined &&
    Number(row['c']) === data.customers.length &&
    Number(row['p']) === data.products.length &&
    Number(row['o']) === data.orders.length &&
    Number(row['i']) === data.orderItems.length
  );
}

async function rebuild(connection: Connection, data: SalesData, marker: string): Promise<void> {
  await connection.query(`DROP TABLE IF EXISTS ${[...TABLES].reverse().join(', ')}`);
  for (const table of TABLES) await connection.query(DDL[table]);
  await insertRows(connection, 'customers', ['id', 'name', 'email', 'country', 'created_at'], data.customers);
  await insertRows(connection, 'products', ['id', 'name', 'category', 'price'], data.products);
  await insertRows(connection, 'orders', ['id', 'customer_id', 'order_date', 'status', 'total'], data.orders);
  await insertRows(
    connection,
    'order_items',
    ['id', 'order_id', 'product_id', 'quantity', 'unit_price'],
    data.orderItems,
  );
  // Last, so only a complete seed is ever marked current.
  for (const table of TABLES) {
    await connection.query(`ALTER TABLE ${quoteIdentifier(table)} COMMENT = ?`, [marker]);
  }
}

async function insertRows<Row extends object>(
  connection: Connection,
  table: string,
  columns: readonly (keyof Row & string)[],
  rows: readonly Row[],
): Promise<void> {
  const columnList = columns.map(quoteIdentifier).join(', ');
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const values = rows.slice(start, start + INSERT_CHUNK).map((row) => columns.map((column) => row[column]));
    // mysql2 expands `VALUES ?` with an array of arrays into one multi-row INSERT, every value escaped.
    await connection.query(`INSERT INTO ${quoteIdentifier(table)} (${columnList}) VALUES ?`, [values]);
  }
}

async function configureReader(
  connection: Connection,
  database: string,
  user: string,
  password: string,
  host: string,
): Promise<void> {
  const account = connection.format('?@?', [user, host]);
  await connection.query(`CREATE USER IF NOT EXISTS ${account} IDENTIFIED BY ?`, [password]);
  // The account may predate this run with another password.
  await connection.query(`ALTER USER ${account} IDENTIFIED BY ?`, [password]);
  const [version] = await connection.query<RowDataPacket[]>('SELECT VERSION() AS v');
  if (!/mariadb/i.test(String(version[0]?.['v'] ?? ''))) {
    // MySQL 8 lets any account change its own password; make that need the current one, which the SQL the
    // model writes never knows. (MariaDB has no such option; the read-only session blocks it there.)
    await connection.query(`ALTER USER ${account} PASSWORD REQUIRE CURRENT`);
  }
  // Everything at every level (global, database, table, column, routine), including GRANT OPTION, then the
  // one privilege the SQL tools need. No FILE, no EXECUTE, nothing on any other database.
  await connection.query(`REVOKE ALL PRIVILEGES, GRANT OPTION FROM ${account}`);
  await connection.query(`GRANT SELECT ON ${quoteIdentifier(database)}.* TO ${account}`);
}

/** The admin URL parsed with the store's parser; the database part is irrelevant here, so any is accepted. */
function adminTarget(url: string): ReturnType<typeof parseMysqlUrl> {
  let withDatabase = url;
  try {
    const parsed = new URL(url);
    if (parsed.pathname === '' || parsed.pathname === '/') {
      parsed.pathname = '/mysql';
      withDatabase = parsed.href;
    }
  } catch {
    // parseMysqlUrl reports the bad URL.
  }
  return parseMysqlUrl(withDatabase);
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
