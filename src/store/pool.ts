// The pool of the fleet's own store. The database is created on first use, every session runs
// in UTC so CURRENT_TIMESTAMP defaults and NOW() agree with the UTC dates the driver writes, and DECIMAL/JSON
// columns come back the same way on MySQL and MariaDB.
import { createConnection, createPool } from 'mysql2/promise';
import type { ConnectionOptions, Pool } from 'mysql2/promise';
import { ConfigError, StoreError } from '../kernel/errors.js';
import { isAccessDenied, isAccountRefusal, isConnectionFailure, mysqlErrorCode } from './mysql-errors.js';
import { parseMysqlUrl, type MysqlTarget } from './mysql-url.js';

export interface StorePoolOptions {
  /** Connections per process; a worker's jobs share them. Default 10. */
  connectionLimit?: number;
  /** Milliseconds to wait for the server at connect. Default 10,000. */
  connectTimeout?: number;
  /**
   * Several statements in one query, one round trip (the run journal's writes). Only for SQL this code builds
   * with placeholders: never on a pool that runs text from elsewhere. Default false.
   */
  multipleStatements?: boolean;
  /** The variable the URL came from, named in error messages. Default `MYSQL_URL`. */
  variable?: string;
  /**
   * Create the database when it is missing. Default true; false for a replica, which is read-only and gets the
   * database from its primary.
   */
  createDatabase?: boolean;
}

/** Quotes a schema, table or column name for SQL text, where placeholders cannot be used. */
export function quoteIdentifier(name: string): string {
  return '`' + name.replaceAll('`', '``') + '`';
}

/** Run first on every connection of a store pool: UTC, and string escapes the driver's way (see below). */
export const SESSION_SETUP =
  "SET time_zone = '+00:00', sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')";

export async function createStorePool(url: string, options: StorePoolOptions = {}): Promise<Pool> {
  const variable = options.variable ?? 'MYSQL_URL';
  const target = parsedAs(url, variable);
  const server: ConnectionOptions = {
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    connectTimeout: options.connectTimeout ?? 10_000,
    charset: 'UTF8MB4_UNICODE_CI',
  };
  if (options.createDatabase ?? true) await ensureDatabase(server, target, variable);
  const pool = createPool({
    ...server,
    database: target.database,
    connectionLimit: options.connectionLimit ?? 10,
    multipleStatements: options.multipleStatements ?? false,
    waitForConnections: true,
    queueLimit: 0,
    enableKeepAlive: true,
    timezone: 'Z',
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    decimalNumbers: true,
    // MySQL sends JSON as a JSON type and MariaDB as text: strings from both, parsed in one place (rows.ts).
    jsonStrings: true,
    // No stack captured per query (mysql2's `trace`): a few % of a worker's CPU; errors keep the server's
    // message and code, and the store's callers wrap them in errors of their own.
    trace: false,
  });
  pool.on('connection', (connection) => {
    // mysql2 hands this event the callback-style connection whatever its typings say; the SET is queued
    // before any query of the caller that asked for this connection.
    const core = connection as unknown as CoreConnection;
    // The driver escapes values with backslashes (placeholders are filled in client-side): a server running with
    // NO_BACKSLASH_ESCAPES would read such a string differently, which for text a model or a tool wrote (answers,
    // observations) means SQL injection, stacked statements included on the journal's pool. Never in our sessions.
    core.query(SESSION_SETUP, (error) => {
      if (error) core.destroy();
    });
  });
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectError(target, error, variable);
  }
  return pool;
}

/** The URL parsed, its messages naming the variable it came from. */
function parsedAs(url: string, variable: string): MysqlTarget {
  try {
    return parseMysqlUrl(url);
  } catch (error) {
    if (error instanceof ConfigError && variable !== 'MYSQL_URL') {
      throw new ConfigError(error.code, error.message.replace(/^MYSQL_URL/, variable));
    }
    throw error;
  }
}

interface CoreConnection {
  query(sql: string, callback: (error: Error | null) => void): unknown;
  destroy(): void;
}

async function ensureDatabase(
  server: ConnectionOptions,
  target: MysqlTarget,
  variable: string,
): Promise<void> {
  let connection;
  try {
    connection = await createConnection(server);
  } catch (error) {
    throw connectError(target, error, variable);
  }
  try {
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(target.database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } catch (error) {
    // An account limited to an existing database may not create one; the pool's own check says whether the
    // database is really missing.
    if (!isAccessDenied(error)) throw connectError(target, error, variable);
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/** An error of the store at `variable` as the fleet reports it: the variable named, its password hidden. */
export function connectError(target: MysqlTarget, error: unknown, variable: string): Error {
  const code = mysqlErrorCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  let reason = [code, detail].filter(Boolean).join(': ');
  // Driver messages do not carry the password today; make sure they never do.
  if (target.password !== '') reason = reason.replaceAll(target.password, '***');
  const message = `${variable}=${target.redacted}: cannot use the store (${reason})`;
  if (isAccountRefusal(error)) return new ConfigError('mysql_access', message);
  const retryable = isConnectionFailure(error);
  return new StoreError(retryable ? 'store_unreachable' : 'store_connect_failed', message, { retryable });
}
