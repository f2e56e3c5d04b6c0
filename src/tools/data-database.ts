// The database the SQL tools read (DATA_MYSQL_URL), behind the layers that do not depend on the SQL guard: a
// read-only account (data-grants.ts), a READ ONLY session set once per connection (data-session.ts), time, row
// and byte limits. The row cap is sql_select_limit plus streaming, not a LIMIT wrapper (it would lose ORDER BY).
// Design: docs/sql-safety.md#the-database-behind-the-guard.
import { createConnection, createPool } from 'mysql2/promise';
import type {
  Connection as PromiseConnection,
  ConnectionOptions,
  FieldPacket,
  Pool,
  PoolConnection,
  PoolOptions,
  RowDataPacket,
} from 'mysql2/promise';
import { ConfigError, TransientToolError } from '../kernel/errors.js';
import { isClientTimeout, isStatementError, leavesConnectionUnusable } from '../store/mysql-errors.js';
import type { MysqlTarget } from '../store/mysql-url.js';
import { QueryStopped, streamRows } from './stream-rows.js';
import { withoutTrailingSemicolons } from './sql-guard-lexer.js';
import {
  describeTable,
  listTables,
  type ListTablesOptions,
  type SchemaReader,
  type TableDescription,
  type TableSummary,
} from './data-catalog.js';
import { AcquireTimeout, connectError, connectFailure, parseDataUrl, toToolError } from './data-errors.js';
import { grantLineProblem } from './data-grants.js';
import {
  isSessionNeutral,
  SessionSettingsCache,
  sessionSetup,
  statementText,
  type StatementLimits,
} from './data-session.js';
import { withTimeout } from '../util/with-timeout.js';

export type { ServerFlavour } from './data-session.js';
import type { ServerFlavour } from './data-session.js';

export interface DataDatabaseOptions {
  /** Connections of this process to the data database (one per running query). Default 10, as WORKER_CONCURRENCY. */
  connectionLimit?: number;
  /** Milliseconds to wait for the server at connect. Default 10,000. */
  connectTimeoutMs?: number;
  /** Run assertReadOnly() before returning (default true); off only for tests that check it themselves. */
  checkGrants?: boolean;
  /** Default of QueryOptions.maxBytes (SQL_MAX_RESULT_BYTES). Default 1 MiB. */
  maxResultBytes?: number;
}

export interface QueryOptions {
  signal?: AbortSignal;
  /** Server-side limit of the statement; the client gives up a second later. Default 5,000. */
  timeoutMs?: number;
  /** Rows returned; one more is fetched to know whether there were more. Default 10. */
  maxRows?: number;
  /** Bytes of values kept; the rows that fit are returned. Default: the database's maxResultBytes. */
  maxBytes?: number;
}

export interface QueryResult {
  /** Column names in result order; duplicates (`c.name, p.name`) are kept. */
  columns: string[];
  /** At most maxRows rows, each an array in column order. */
  rows: unknown[][];
  /**
   * Rows of the whole result: rows.length when not truncated; when truncated, a COUNT(*) of the query run
   * under what was left of the same time limit, or null when that was not cheap ("more than maxRows").
   */
  rowCount: number | null;
  truncated: boolean;
  /** Set (to maxBytes) when the rows stop short because the next one would pass maxBytes. */
  cutAtBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_ROWS = 10;
const MAX_MAX_ROWS = 10_000;
export const DEFAULT_MAX_RESULT_BYTES = 1_048_576;
/** The client waits this long past the server-side limit, so the server's clearer error normally wins. */
const CLIENT_GRACE_MS = 1_000;
/** Bookkeeping statements (the session SET, a reset, information_schema) get this long. */
const ADMIN_TIMEOUT_MS = 5_000;
/** KILL QUERY gets this long to connect and to be answered. */
const KILL_TIMEOUT_MS = 2_000;
/** A COUNT(*) for "showing 10 of N" is only tried with at least this much of the time limit left. */
const MIN_COUNT_MS = 200;

export async function openDataDatabase(
  url: string,
  options: DataDatabaseOptions = {},
): Promise<DataDatabase> {
  const target = parseDataUrl(url);
  const server: ConnectionOptions = {
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    charset: 'UTF8MB4_UNICODE_CI',
    // No LOCAL INFILE capability (the server can never ask for a client file) and no stacked statements.
    flags: ['-LOCAL_FILES', '-MULTI_STATEMENTS'],
    multipleStatements: false,
  };
  const pool = createPool({
    ...server,
    database: target.database,
    connectionLimit: options.connectionLimit ?? 10,
    waitForConnections: true,
    queueLimit: 0,
    enableKeepAlive: true,
    // No COM_RESET_CONNECTION on release: a statement that could leave anything in its session is screened
    // and its connection dropped instead (data-session.ts); the others leave nothing to reset.
    resetOnRelease: false,
    // Sessions run in UTC (set per connection, and per statement on MariaDB), so DATETIME/TIMESTAMP values map
    // to Dates without shifting.
    timezone: 'Z',
    dateStrings: false,
    // DECIMAL as exact text ('1234.50'); BIGINT as numbers while exact (COUNT(*)), text beyond 2^53.
    decimalNumbers: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    jsonStrings: true,
    // No stack captured per query (mysql2's `trace`): errors are mapped to the model's messages anyway.
    trace: false,
  } satisfies PoolOptions);
  let version: string;
  try {
    const [rows] = await pool.query<RowDataPacket[]>({
      sql: 'SELECT VERSION() AS v',
      timeout: ADMIN_TIMEOUT_MS,
    });
    version = String(rows[0]?.['v'] ?? '');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectError(target, error);
  }
  const db = new DataDatabase(pool, target, server, version, options.maxResultBytes);
  if (options.checkGrants ?? true) {
    try {
      await db.assertReadOnly();
    } catch (error) {
      await db.close();
      throw error;
    }
  }
  return db;
}

export class DataDatabase {
  readonly flavour: ServerFlavour;
  readonly database: string;
  /** DATA_MYSQL_URL with its password replaced, for messages and logs. */
  readonly redactedUrl: string;
  private readonly schema: SchemaReader;
  private readonly sessions = new SessionSettingsCache();

  constructor(
    private readonly pool: Pool,
    private readonly target: MysqlTarget,
    /** Connection options without a database, for the side connection that sends KILL QUERY. */
    private readonly server: ConnectionOptions,
    readonly serverVersion: string,
    private readonly maxResultBytes = DEFAULT_MAX_RESULT_BYTES,
  ) {
    this.flavour = /mariadb/i.test(serverVersion) ? 'mariadb' : 'mysql';
    this.database = target.database;
    this.redactedUrl = target.redacted;
    this.schema = { database: target.database, query: (sql, values) => this.adminQuery(sql, values) };
  }

  /**
   * Refuses (ConfigError naming DATA_MYSQL_URL and the privilege) unless the account can only read: root, any
   * privilege other than SELECT / SHOW VIEW / USAGE at any level (global, database, table, column, routine,
   * proxy), GRANT OPTION, a granted role (its privileges are not listed here, so it is not trusted), SELECT
   * on every database (*.*) or anything on the `mysql` schema.
   */
  async assertReadOnly(): Promise<void> {
    const [who] = await this.adminQuery('SELECT CURRENT_USER() AS u', []);
    const account = String(who[0]?.['u'] ?? '');
    const user = account.slice(0, Math.max(account.lastIndexOf('@'), 0)) || account;
    const prefix = `DATA_MYSQL_URL=${this.redactedUrl}: the SQL tools need a read-only account (SELECT on ${this.database} only)`;
    if (user === 'root') throw new ConfigError('data_mysql_not_read_only', `${prefix}; got root`);

    const lines = await this.grantLines('SHOW GRANTS FOR CURRENT_USER()');
    if (this.flavour === 'mariadb') {
      // MariaDB 10.11+ applies grants TO PUBLIC to every account; older servers reject the statement.
      lines.push(...(await this.grantLines('SHOW GRANTS FOR PUBLIC').catch(() => [])));
    }
    for (const line of lines) {
      const problem = grantLineProblem(line);
      if (problem) {
        throw new ConfigError('data_mysql_not_read_only', `${prefix}; ${account} holds ${problem}`);
      }
    }
  }

  async query(sql: string, options: QueryOptions = {}): Promise<QueryResult> {
    const maxRows = Math.min(Math.max(Math.floor(options.maxRows ?? DEFAULT_MAX_ROWS), 0), MAX_MAX_ROWS);
    const timeoutMs = Math.max(Math.floor(options.timeoutMs ?? DEFAULT_TIMEOUT_MS), 1);
    const maxBytes = Math.max(Math.floor(options.maxBytes ?? this.maxResultBytes), 1);
    const deadline = Date.now() + timeoutMs;
    // The server takes one statement without multi-statements; a trailing `;` is the model's habit, not a second.
    const statement = withoutTrailingSemicolons(sql);
    const { signal } = options;
    const { columns, rows, overBytes } = await this.run(statement, {
      timeoutMs,
      signal,
      fetch: maxRows + 1,
      maxBytes,
    });
    if (!overBytes && rows.length <= maxRows) {
      return { columns, rows, rowCount: rows.length, truncated: false };
    }
    const rowCount = await this.countRows(statement, deadline, signal);
    const cut = { columns, rows: rows.slice(0, maxRows), rowCount, truncated: true };
    // The extra row only tells whether there are more: its size cuts nothing the caller would have seen.
    return overBytes && rows.length < maxRows ? { ...cut, cutAtBytes: maxBytes } : cut;
  }

  /** Tables and views with their column names, the first `limit` by name (data-catalog.ts). */
  listTables(options: ListTablesOptions = {}): Promise<TableSummary[]> {
    return listTables(this.schema, options);
  }

  /** One table's columns (exact name first, then case-insensitive); undefined if there is no such table. */
  describeTable(name: string): Promise<TableDescription | undefined> {
    return describeTable(this.schema, name);
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }

  // -------------------------------------------------------------------------------------------------------

  private async grantLines(sql: string): Promise<string[]> {
    return this.withConnection(async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>({
        sql,
        timeout: ADMIN_TIMEOUT_MS,
        rowsAsArray: true,
      });
      return (rows as unknown as unknown[][]).map((row) => String(row[0] ?? ''));
    });
  }

  /** A fixed, parameterized query of our own (information_schema), with errors mapped like the model's. */
  private async adminQuery(sql: string, values: unknown[]): Promise<[RowDataPacket[], FieldPacket[]]> {
    try {
      return await this.withConnection((connection) =>
        connection.query<RowDataPacket[]>({ sql, timeout: ADMIN_TIMEOUT_MS }, values),
      );
    } catch (error) {
      throw toToolError(error, ADMIN_TIMEOUT_MS, this.redact);
    }
  }

  /**
   * A pooled connection with the session every caller expects (set on its first use, data-session.ts), for a
   * fixed query of our own.
   */
  private async withConnection<T>(work: (connection: PoolConnection) => Promise<T>): Promise<T> {
    let connection: PoolConnection;
    try {
      connection = await this.acquire(ADMIN_TIMEOUT_MS);
    } catch (error) {
      throw connectFailure(error, ADMIN_TIMEOUT_MS, this.redact);
    }
    let reusable = true;
    try {
      await this.prepareSession(connection, undefined);
      return await work(connection);
    } catch (error) {
      if (leavesConnectionUnusable(error)) reusable = false;
      throw error;
    } finally {
      if (reusable) connection.release();
      else discard(connection);
    }
  }

  /**
   * Runs one statement in a read-only transaction of a read-only session with the time limits, streaming at
   * most `fetch` rows and `maxBytes` of values; anything beyond stops the query (KILL QUERY) and drops the
   * connection. One round trip when the connection's session is set already and the statement is neutral
   * (data-session.ts); a statement that is not gets a reset session and its connection is dropped after it.
   */
  private async run(
    sql: string,
    { timeoutMs, signal, fetch, maxBytes }: RunLimits,
  ): Promise<{ columns: string[]; rows: unknown[][]; overBytes: boolean }> {
    if (signal?.aborted) throw toToolError(new QueryStopped('aborted'), timeoutMs, this.redact);
    let connection: PoolConnection;
    try {
      connection = await this.acquire(timeoutMs);
    } catch (error) {
      throw connectFailure(error, ADMIN_TIMEOUT_MS, this.redact);
    }
    const threadId = connection.threadId;
    const limits: StatementLimits = { timeoutMs, fetch };
    const neutral = isSessionNeutral(sql);
    let reusable = neutral;
    let sent = false;
    try {
      if (!neutral) await this.resetSession(connection);
      await this.prepareSession(connection, limits);
      throwIfAborted(signal);
      sent = true;
      const outcome = await streamRows(connection, statementText(this.flavour, sql, limits), {
        fetch,
        maxBytes,
        signal,
        clientTimeoutMs: timeoutMs + CLIENT_GRACE_MS,
      });
      if (outcome.stopped) {
        reusable = false;
        await this.killQuery(threadId);
      }
      return outcome;
    } catch (error) {
      // A server error about the SQL leaves the connection fine (autocommit ended its transaction); anything
      // else (abort, client timeout, broken connection) may leave the query running or the protocol mid-way.
      const stoppedEarly = error instanceof QueryStopped && !sent;
      if (leavesConnectionUnusable(error) && !stoppedEarly) reusable = false;
      let answered = true;
      if (sent && (error instanceof QueryStopped || isClientTimeout(error))) {
        answered = await this.killQuery(threadId);
      }
      // No answer to the session set-up, or to the statement and then to a KILL QUERY from a new connection:
      // the server stopped answering (a partition, a frozen server). An outage, not a slow query.
      if (isClientTimeout(error) && (!sent || !answered)) {
        throw new TransientToolError('The data database did not answer; try again.', {
          code: 'data_db_unavailable',
          cause: error,
        });
      }
      throw toToolError(error, timeoutMs, this.redact);
    } finally {
      if (reusable) connection.release();
      else discard(connection);
    }
  }

  /**
   * Sends the session SET when this connection does not hold it yet (its first use; on MySQL also when the
   * statement's limits differ from the last ones). Otherwise no round trip at all.
   */
  private async prepareSession(
    connection: PoolConnection,
    limits: StatementLimits | undefined,
  ): Promise<void> {
    const sql = this.sessions.needed(connection.connection, sessionSetup(this.flavour, limits));
    if (sql === undefined) return;
    await connection.query({ sql, timeout: ADMIN_TIMEOUT_MS });
    this.sessions.record(connection.connection, sql);
  }

  /** COM_RESET_CONNECTION, for a statement that must find nothing of an earlier one in its session. */
  private async resetSession(connection: PoolConnection): Promise<void> {
    this.sessions.forget(connection.connection);
    // No answer: the server is away (the caller drops the connection, whose reset may still be on the wire).
    await withTimeout(connection.reset(), ADMIN_TIMEOUT_MS, {
      timedOut: () =>
        new TransientToolError('The data database did not answer; try again.', {
          code: 'data_db_unavailable',
        }),
    });
  }

  /** COUNT(*) of the query under what is left of its time limit; null when too little is left or it fails. */
  private async countRows(
    statement: string,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<number | null> {
    const remaining = deadline - Date.now();
    if (remaining < MIN_COUNT_MS) return null;
    try {
      // Newlines: a trailing `-- comment` in the query must not swallow the closing parenthesis.
      const { rows } = await this.run(`SELECT COUNT(*) FROM (\n${statement}\n) AS af_counted`, {
        timeoutMs: remaining,
        signal,
        fetch: 1,
        maxBytes: DEFAULT_MAX_RESULT_BYTES,
      });
      const count = Number(rows[0]?.[0]);
      return Number.isSafeInteger(count) ? count : null;
    } catch (error) {
      // Aborted: say so. Anything else (duplicate column names, a timeout) just means "more than maxRows".
      if (signal?.aborted) throw error;
      return null;
    }
  }

  /**
   * A pooled connection, or a transient error once waiting for one outlasts a connect and a query's time limit:
   * under load a connection frees up within that, so waiting longer means the pool's connections are stuck (a
   * partition in the middle of a command without a timeout of its own).
   */
  private async acquire(queryTimeoutMs: number): Promise<PoolConnection> {
    const pending = this.pool.getConnection();
    const limitMs = (this.server.connectTimeout ?? 10_000) + queryTimeoutMs + CLIENT_GRACE_MS;
    try {
      return await withTimeout(pending, limitMs, { timedOut: () => new AcquireTimeout(limitMs) });
    } catch (error) {
      // The request stays queued in the pool: a connection it gets later goes straight back.
      if (error instanceof AcquireTimeout)
        pending.then(
          (c) => c.release(),
          () => undefined,
        );
      throw error;
    }
  }

  /**
   * KILL QUERY from a connection of its own: the pool may be exhausted, and the victim is busy. False when the
   * server did not answer at all (no connection, or no reply in time): it is away, not just slow.
   */
  private async killQuery(threadId: number): Promise<boolean> {
    let side: PromiseConnection | undefined;
    try {
      side = await createConnection({ ...this.server, connectTimeout: KILL_TIMEOUT_MS });
      await side.query({ sql: `KILL QUERY ${Number(threadId)}`, timeout: KILL_TIMEOUT_MS });
      return true;
    } catch (error) {
      // Best effort: the query may have ended already (unknown thread: an answer all the same), and dropping
      // its connection makes the server stop it at its next write anyway.
      return isStatementError(error);
    } finally {
      side?.destroy();
    }
  }

  /** A message without the URL or the password. */
  private readonly redact = (text: string): string => {
    const { password } = this.target;
    let result = text.replaceAll(this.redactedUrl, '(DATA_MYSQL_URL)');
    if (password.length >= 3) result = result.replaceAll(password, '***');
    return result;
  };
}

/**
 * Drops a connection for good. mysql2's destroy() only half-closes the socket: a server still writing a result
 * we stopped reading would stay blocked in that write, killed or not, until net_write_timeout (60 s), holding
 * its locks and a connection. Closing the socket outright fails that write at once.
 */
function discard(connection: PoolConnection): void {
  connection.destroy();
  (connection.connection as unknown as { stream?: { destroy?: () => void } }).stream?.destroy?.();
}

interface RunLimits {
  timeoutMs: number;
  signal: AbortSignal | undefined;
  fetch: number;
  maxBytes: number;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new QueryStopped('aborted');
}
