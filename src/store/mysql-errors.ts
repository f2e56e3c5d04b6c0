// How the fleet reads a mysql2 error, for the store and the data database alike: an outage of the connection
// (wait and try again: the same statement may well work in a moment) or a failure of the statement (trying
// again gives the same answer), and the few statement failures callers treat apart. By the driver's structured
// `code`, `errno`, `fatal` and `sqlState` fields, never by message text.
import { SOCKET_FAILURE_CODES } from '../util/socket-errors.js';

/**
 * Codes of a connection that broke or could not be made: transient, because none of them says anything about
 * the statement, only that the server was away, busy or restarting when it was sent.
 */
export const CONNECTION_FAILURE_CODES: ReadonlySet<string> = new Set([
  // The socket was refused, unreachable, reset or timed out (Node's codes, shared with Redis, SMTP and MCP).
  ...SOCKET_FAILURE_CODES,
  // mysql2: the server closed the socket under us, or a query was queued on a connection already dead.
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  // The server is shutting down (a restart or failover): it will be back, or its replacement will.
  'ER_SERVER_SHUTDOWN',
  // Too many connections, server-wide or for the account: others will end and free one.
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  // An operator or a failover killed the connection, not the statement's own error.
  'ER_CONNECTION_KILLED',
  // The network broke in the middle of a packet, either way.
  'ER_NET_READ_ERROR',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_WRITE_INTERRUPTED',
  'ER_NET_ERROR_ON_WRITE',
  // MySQL 8 dropped a connection idle past wait_timeout: a new one works.
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);

/** The server refuses the account or its database: it will keep doing so until an operator changes a grant. */
const ACCOUNT_REFUSAL_CODES: ReadonlySet<string> = new Set([
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
]);

/** Server errors of a statement stopped by its time limit: MariaDB max_statement_time, MySQL MAX_EXECUTION_TIME. */
const STATEMENT_TIMEOUT_ERRNOS: ReadonlySet<number> = new Set([1969, 3024]);

/** The driver's error code ('ECONNREFUSED', 'ER_PARSE_ERROR'), or undefined for anything else. */
export function mysqlErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * A failure of the connection to the server, not of a statement: transient, an outage the caller should wait
 * out (and the connection it came from is lost).
 */
export function isConnectionFailure(error: unknown): boolean {
  const code = mysqlErrorCode(error);
  if (code !== undefined && CONNECTION_FAILURE_CODES.has(code)) return true;
  // A fatal error without an SQLSTATE is the driver losing the connection, whatever its code.
  return isFatal(error) && !hasSqlState(error);
}

/**
 * An error the server sent about a statement (it has an SQLSTATE and the connection survived it): the
 * connection is fine for the next statement.
 */
export function isStatementError(error: unknown): boolean {
  return hasSqlState(error) && !isFatal(error);
}

/** The connection may be mid-protocol or gone: anything but a server's answer about the statement. */
export function leavesConnectionUnusable(error: unknown): boolean {
  return !isStatementError(error) || isConnectionFailure(error);
}

/** Access denied to the account (wrong password, no grant for the host or the database). */
export function isAccessDenied(error: unknown): boolean {
  const code = mysqlErrorCode(error);
  return code === 'ER_DBACCESS_DENIED_ERROR' || code === 'ER_ACCESS_DENIED_ERROR';
}

/** Access denied, or the database does not exist: a configuration problem, not an outage. */
export function isAccountRefusal(error: unknown): boolean {
  const code = mysqlErrorCode(error);
  return code !== undefined && ACCOUNT_REFUSAL_CODES.has(code);
}

/** The driver gave up waiting for an answer (a query's `timeout` option). */
export function isClientTimeout(error: unknown): boolean {
  return mysqlErrorCode(error) === 'PROTOCOL_SEQUENCE_TIMEOUT';
}

/** The server stopped the statement at its time limit, or the client stopped waiting for it. */
export function isStatementTimeout(error: unknown): boolean {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return isClientTimeout(error) || (typeof errno === 'number' && STATEMENT_TIMEOUT_ERRNOS.has(errno));
}

/** The server's own message (without the driver's prefix), when it sent one. */
export function sqlMessage(error: unknown): string | undefined {
  const message = (error as { sqlMessage?: unknown } | null)?.sqlMessage;
  return typeof message === 'string' ? message : undefined;
}

function isFatal(error: unknown): boolean {
  return (error as { fatal?: unknown } | null)?.fatal === true;
}

function hasSqlState(error: unknown): boolean {
  const state = (error as { sqlState?: unknown } | null)?.sqlState;
  return typeof state === 'string' && state !== '';
}
