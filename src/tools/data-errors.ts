// The data database's failures as their readers should see them: the model reads its SQL's error verbatim, a
// transient outage as one to retry, never the URL or the password; the operator reads a start-up failure naming
// DATA_MYSQL_URL.
import { ConfigError, StoreError, ToolError, TransientToolError } from '../kernel/errors.js';
import {
  isAccountRefusal,
  isConnectionFailure,
  isStatementError,
  isStatementTimeout,
  mysqlErrorCode,
  sqlMessage,
} from '../store/mysql-errors.js';
import { parseMysqlUrl, type MysqlTarget } from '../store/mysql-url.js';
import { QueryStopped } from './stream-rows.js';

/** Every failure as the model should read it: its SQL's error verbatim, never the URL or the password. */
export function toToolError(error: unknown, timeoutMs: number, redact: (text: string) => string): ToolError {
  if (error instanceof ToolError) return error;
  if (error instanceof QueryStopped) return new ToolError('aborted', 'The query was cancelled.');
  if (error instanceof AcquireTimeout) {
    return new TransientToolError(`The data database did not answer (${error.message}); try again.`, {
      code: 'data_db_unavailable',
      cause: error,
    });
  }
  const code = mysqlErrorCode(error);
  if (isStatementTimeout(error)) {
    return new ToolError(
      'query_timeout',
      `The query ran longer than ${formatSeconds(timeoutMs)} and was stopped; filter with WHERE, aggregate, or add LIMIT.`,
      { cause: error },
    );
  }
  const raw = error instanceof Error ? error.message : String(error);
  const message = redact(sqlMessage(error) ?? raw);
  if (isConnectionFailure(error)) {
    return new TransientToolError(`The data database connection failed (${code ?? message}); try again.`, {
      code: 'data_db_unavailable',
      cause: error,
    });
  }
  return new ToolError(isStatementError(error) ? 'sql_error' : 'sql_failed', message, { cause: error });
}

/** A new connection failed: the server is away (transient) or refuses the account (it will keep doing so). */
export function connectFailure(
  error: unknown,
  timeoutMs: number,
  redact: (text: string) => string,
): ToolError {
  if (isAccountRefusal(error)) {
    const message = redact(sqlMessage(error) ?? String(error));
    return new ToolError('data_db_access', `The data database refused the connection: ${message}`, {
      cause: error,
    });
  }
  return toToolError(error, timeoutMs, redact);
}

/** No pooled connection came free in time. */
export class AcquireTimeout extends Error {
  constructor(limitMs: number) {
    super(`no connection free within ${formatSeconds(limitMs)}`);
  }
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** DATA_MYSQL_URL through the store's parser, with its messages naming the right variable. */
export function parseDataUrl(url: string): MysqlTarget {
  try {
    return parseMysqlUrl(url);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new ConfigError(error.code, error.message.replace(/^MYSQL_URL/, 'DATA_MYSQL_URL'));
    }
    throw error;
  }
}

export function connectError(target: MysqlTarget, error: unknown): Error {
  const code = mysqlErrorCode(error);
  let reason = [code, error instanceof Error ? error.message : String(error)].filter(Boolean).join(': ');
  if (target.password !== '') reason = reason.replaceAll(target.password, '***');
  const message = `DATA_MYSQL_URL=${target.redacted}: cannot use the data database (${reason})`;
  if (isAccountRefusal(error)) {
    return new ConfigError('data_mysql_access', message);
  }
  // Unreachable now may be reachable in a moment (a server still starting): retryable, like the store's.
  const retryable = isConnectionFailure(error);
  return new StoreError(retryable ? 'data_db_unreachable' : 'data_db_connect_failed', message, { retryable });
}
