// One reading of mysql2 errors for the store and the data database: a table of the driver's and the server's
// codes and what each means.
import { describe, expect, it } from 'vitest';
import {
  CONNECTION_FAILURE_CODES,
  isAccessDenied,
  isAccountRefusal,
  isConnectionFailure,
  isStatementError,
  isStatementTimeout,
  leavesConnectionUnusable,
} from '../src/store/mysql-errors.js';

interface Row {
  error: Record<string, unknown>;
  connectionFailure: boolean;
  statementError: boolean;
  unusable: boolean;
}

const sqlError = (code: string, errno: number, sqlState: string) => ({ code, errno, sqlState, fatal: false });
const socket = (code: string) => ({ code, fatal: true });

const TABLE: Row[] = [
  // Sockets: refused, unreachable, reset, timed out.
  ...['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL'].map(
    (code) => ({
      error: socket(code),
      connectionFailure: true,
      statementError: false,
      unusable: true,
    }),
  ),
  ...['ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE'].map((code) => ({
    error: socket(code),
    connectionFailure: true,
    statementError: false,
    unusable: true,
  })),
  // The driver lost the connection.
  ...['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR'].map((code) => ({
    error: socket(code),
    connectionFailure: true,
    statementError: false,
    unusable: true,
  })),
  // A fatal error the driver has no name for, without an SQLSTATE: still a lost connection.
  {
    error: { code: 'SOMETHING_NEW', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  // The server going away or full, with their SQLSTATEs: transient although the server sent them.
  {
    error: { code: 'ER_SERVER_SHUTDOWN', errno: 1053, sqlState: '08S01', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  {
    error: { code: 'ER_CON_COUNT_ERROR', errno: 1040, sqlState: '08004', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  {
    error: { code: 'ER_TOO_MANY_USER_CONNECTIONS', errno: 1203, sqlState: '42000', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  {
    error: { code: 'ER_CONNECTION_KILLED', errno: 1927, sqlState: '70100', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  ...[
    'ER_NET_READ_ERROR',
    'ER_NET_READ_INTERRUPTED',
    'ER_NET_WRITE_INTERRUPTED',
    'ER_NET_ERROR_ON_WRITE',
  ].map((code) => ({
    error: { code, sqlState: '08S01', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  })),
  {
    error: { code: 'ER_CLIENT_INTERACTION_TIMEOUT', errno: 4031, sqlState: 'HY000', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
  // Statements the server refused: the connection is fine and trying again gives the same answer.
  {
    error: sqlError('ER_PARSE_ERROR', 1064, '42000'),
    connectionFailure: false,
    statementError: true,
    unusable: false,
  },
  {
    error: sqlError('ER_DATA_TOO_LONG', 1406, '22001'),
    connectionFailure: false,
    statementError: true,
    unusable: false,
  },
  {
    error: sqlError('ER_DUP_ENTRY', 1062, '23000'),
    connectionFailure: false,
    statementError: true,
    unusable: false,
  },
  {
    error: sqlError('ER_STATEMENT_TIMEOUT', 1969, '70100'),
    connectionFailure: false,
    statementError: true,
    unusable: false,
  },
  // A fatal error with an SQLSTATE (a handshake refusal): the server answered, it will answer the same again.
  {
    error: { code: 'ER_PARSE_ERROR', fatal: true, sqlState: '42000' },
    connectionFailure: false,
    statementError: false,
    unusable: true,
  },
  {
    error: { code: 'ER_NOT_SUPPORTED_AUTH_MODE', errno: 1251, sqlState: '08004', fatal: true },
    connectionFailure: false,
    statementError: false,
    unusable: true,
  },
  // The client gave up waiting: the query may still run, so the connection is dropped; not a lost server.
  {
    error: { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true },
    connectionFailure: true,
    statementError: false,
    unusable: true,
  },
];

describe('mysql2 error classification', () => {
  it.each(TABLE.map((row) => [String(row.error['code']), row] as const))('%s', (_code, row) => {
    expect({
      connectionFailure: isConnectionFailure(row.error),
      statementError: isStatementError(row.error),
      unusable: leavesConnectionUnusable(row.error),
    }).toEqual({
      connectionFailure: row.connectionFailure,
      statementError: row.statementError,
      unusable: row.unusable,
    });
  });

  it('every code of the set is in the table', () => {
    const tabled = new Set(TABLE.map((row) => row.error['code']));
    expect([...CONNECTION_FAILURE_CODES].filter((code) => !tabled.has(code))).toEqual([]);
  });

  it('reads fields, never message text', () => {
    expect(isConnectionFailure(new Error('connect ECONNREFUSED 127.0.0.1:3306'))).toBe(false);
    expect(isConnectionFailure(null)).toBe(false);
    expect(isConnectionFailure('ECONNREFUSED')).toBe(false);
  });

  it('tells a refused account from an outage', () => {
    for (const code of ['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR']) {
      const error = { code, sqlState: '28000', fatal: true };
      expect([isAccountRefusal(error), isConnectionFailure(error)]).toEqual([true, false]);
    }
    expect(isAccessDenied({ code: 'ER_BAD_DB_ERROR' })).toBe(false);
    expect(isAccountRefusal({ code: 'ECONNREFUSED' })).toBe(false);
  });

  it('knows both servers’ statement time limits and the client’s', () => {
    expect(isStatementTimeout({ errno: 1969, code: 'ER_STATEMENT_TIMEOUT' })).toBe(true); // MariaDB
    expect(isStatementTimeout({ errno: 3024, code: 'ER_QUERY_TIMEOUT' })).toBe(true); // MySQL
    expect(isStatementTimeout({ code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true })).toBe(true);
    expect(isStatementTimeout({ errno: 1064, code: 'ER_PARSE_ERROR' })).toBe(false);
  });
});
