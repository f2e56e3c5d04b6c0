// The session of a pooled data-database connection: set once, on the connection's first use, then kept for
// every later query, instead of set before and reset after each one (three round trips per statement → one).
// Design: docs/sql-safety.md#one-round-trip-per-statement.
//
// Why nothing survives from one use of a connection into the next without a reset: a statement leaves state
// in its session only by being something else than a SELECT (SET, PREPARE, HANDLER … OPEN, USE, LOCK TABLES,
// START TRANSACTION, XA), by variables (`@x :=`, `INTO @x`), or by a few built-in functions (named locks,
// LAST_INSERT_ID(expr), sequences). With autocommit a SELECT's transaction ends with it, failed or not; a
// SELECT cannot change the character set or the default database, nor create temporary tables or prepared
// statements. And a statement reads what an earlier one left (its warnings, FOUND_ROWS, session status)
// only through SHOW, GET DIAGNOSTICS, variables, those functions or information_schema.
// The guard refuses all of these. Independently of it, `isSessionNeutral` screens the raw text (strings and
// comments included, so it can only err towards "not neutral"); what it does not pass gets the old treatment:
// a reset before the statement (it reads nothing a previous user left, but for FOUND_ROWS(), which no reset
// clears) and the connection dropped after it (nothing it left reaches the next user). Not covered: code the operator installed on the server (a UDF, a
// stored function behind a view), whose effects no text shows.
/** Which server the data database is: MariaDB takes per-statement settings, MySQL does not. */
export type ServerFlavour = 'mariadb' | 'mysql';

/**
 * UTF-8 both ways and UTC (see the pool's timezone option), as every caller expects; and autocommit, which
 * ends each statement's transaction with it: a server configured with autocommit off would otherwise keep the
 * first SELECT's transaction (its snapshot, its metadata locks) open for every later user of the connection.
 */
const SESSION_BASICS =
  "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci, SESSION time_zone = '+00:00', SESSION autocommit = 1";
/** MariaDB's limits ride on each statement (statementText), so its session setting never changes. */
const MARIADB_SETUP = `${SESSION_BASICS}, SESSION tx_read_only = 1`;

/**
 * A statement that starts as a SELECT (or WITH …) and names nothing that touches the session: no variable,
 * no INTO, no function with a session effect or that reads the previous statement's leftovers, no system
 * schema (information_schema.SESSION_STATUS shows the last query's cost and counters). RAND() too: without a
 * seed it steps the session's generator, whose next value tells how many calls ran before (the row count of
 * a previous user's `ORDER BY RAND()`) and predicts the next user's; a reset reseeds it.
 */
const NEUTRAL_START = /^[\s(]*(?:select|with)\b/i;
const SESSION_WORDS =
  /(?<![A-Za-z0-9_$])(?:into|rand|get_lock|release_lock|release_all_locks|last_insert_id|nextval|setval|lastval|next\s+value|previous\s+value|found_rows|row_count|information_schema|performance_schema|service_[a-z_]*locks|version_tokens_[a-z_]*)(?![A-Za-z0-9_$])/i;

/** True when the statement can neither change the session nor read what an earlier statement left in it. */
export function isSessionNeutral(sql: string): boolean {
  return NEUTRAL_START.test(sql) && !sql.includes('@') && !SESSION_WORDS.test(sql);
}

/** The limits a model's statement runs under (on MariaDB they ride on the statement itself). */
export interface StatementLimits {
  timeoutMs: number;
  /** sql_select_limit: the rows the server sends at most. */
  fetch: number;
}

/**
 * The SET that gives a connection the session its next statement needs: UTF-8, UTC, READ ONLY (with
 * autocommit each statement is then a read-only transaction of its own; the session setting also covers
 * statements that commit implicitly, such as DDL and SET PASSWORD). MySQL has no per-statement SET, so its
 * limits are session settings too: those of a model's statement, or the server's defaults for our own
 * bookkeeping queries (`limits` undefined).
 */
export function sessionSetup(flavour: ServerFlavour, limits: StatementLimits | undefined): string {
  if (flavour === 'mariadb') return MARIADB_SETUP;
  const bounds = limits
    ? `SESSION MAX_EXECUTION_TIME = ${Math.floor(limits.timeoutMs)}, SESSION sql_select_limit = ${Math.floor(limits.fetch)}`
    : 'SESSION MAX_EXECUTION_TIME = DEFAULT, SESSION sql_select_limit = DEFAULT';
  return `${SESSION_BASICS}, SESSION transaction_read_only = 1, ${bounds}`;
}

/**
 * The text sent for a model's statement. On MariaDB the limits, READ ONLY and UTC are bound to the statement
 * itself (SET STATEMENT accepts tx_read_only and time_zone, not the character set): a statement so prefixed
 * runs read-only in UTC whatever its session holds. sql_select_limit caps only the top-level result.
 */
export function statementText(flavour: ServerFlavour, sql: string, limits: StatementLimits): string {
  if (flavour !== 'mariadb') return sql;
  const seconds = (limits.timeoutMs / 1000).toFixed(3);
  return `SET STATEMENT max_statement_time=${seconds}, sql_select_limit=${Math.floor(limits.fetch)}, tx_read_only=1, time_zone='+00:00' FOR ${sql}`;
}

/**
 * What each open connection's session was last set to, by the driver's connection object (the pool hands out
 * a new wrapper on every acquire, the same connection underneath). A dropped connection leaves with its entry.
 */
export class SessionSettingsCache {
  private readonly applied = new WeakMap<object, string>();

  /** The SET to send before the next statement on this connection, or undefined when it is already so. */
  needed(connection: object, setup: string): string | undefined {
    return this.applied.get(connection) === setup ? undefined : setup;
  }

  /** The SET went through: the session now holds it. */
  record(connection: object, setup: string): void {
    this.applied.set(connection, setup);
  }

  /** The session was reset (or may hold anything): the next use sets it again. */
  forget(connection: object): void {
    this.applied.delete(connection);
  }
}
