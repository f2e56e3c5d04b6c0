// Which MySQL driver and server errors mean "the server is unreachable or dropped the connection" (an outage:
// wait and try again) rather than "this statement failed" (trying again gives the same answer). Classified by
// the driver's structured `code` and `fatal` fields, never by message text.
import { SOCKET_FAILURE_CODES } from '../util/socket-errors.js';

/** Driver and server codes of a connection that broke or could not be made. */
export const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  ...SOCKET_FAILURE_CODES,
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_CONNECTION_KILLED',
  'ER_NET_READ_ERROR',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_WRITE_INTERRUPTED',
  'ER_NET_ERROR_ON_WRITE',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);

/** A failure of the connection to the server, not of a statement: an outage the caller should wait out. */
export function isConnectionFailure(error: unknown): boolean {
  const fields = error as { code?: unknown; fatal?: unknown; sqlState?: unknown } | null;
  if (typeof fields?.code === 'string' && CONNECTION_ERROR_CODES.has(fields.code)) return true;
  // A fatal error without an SQLSTATE is the driver losing the connection, whatever its code.
  return fields?.fatal === true && !(typeof fields.sqlState === 'string' && fields.sqlState !== '');
}
