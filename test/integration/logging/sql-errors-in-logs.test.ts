// A store error logged as the worker logs it: mysql2 puts the statement it sent on the error with the values
// formatted in, and those values are run data (a tool result, a model's text). Against the real MariaDB, a
// failing INSERT whose values hold a mark: the log line names the statement and the server's message, never
// the mark.
import { Writable } from 'node:stream';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logging/logger.js';
import { SQL_SHAPE_MAX_CHARS, sqlShape } from '../../../src/logging/sql-shape.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const MARK = 'RUN-DATA-MARK-q7';
const TABLE = `af_sql_log_${process.pid}`;

let connection: mysql.Connection;

setupOrFail(async () => {
  const url = new URL(SERVER);
  url.pathname = '/test';
  connection = await mysql.createConnection(url.href);
  await connection.query(`CREATE TABLE ${TABLE} (id INT PRIMARY KEY, note VARCHAR(8))`);
});

afterAll(async () => {
  await connection?.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await connection?.end();
});

function captured(): { write: (error: unknown) => void; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString('utf8'));
      callback();
    },
  });
  const logger = createLogger('sql-log-test', 'info', stream);
  return {
    write: (error) => logger.error({ err: error }, 'trace write failed'),
    text: () => chunks.join(''),
  };
}

describe('a driver error in a log line', () => {
  it('shows the statement’s shape and the server’s message, not the values it carried', async () => {
    // Values formatted client-side (query, not execute): the error's `sql` holds them.
    const error = await connection
      .query(`INSERT INTO ${TABLE} (id, note) VALUES (?, ?)`, [7, `${MARK} longer than eight`])
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as { sql?: string }).sql).toContain(MARK);
    const log = captured();
    log.write(error);
    const line = log.text();
    expect(line).not.toContain(MARK);
    expect(line).toContain(`INSERT INTO ${TABLE} (id, note) VALUES (?, ?)`);
    expect(line).toContain('ER_DATA_TOO_LONG');
  });

  it('keeps names with digits, cuts a long statement and says how long it was', () => {
    expect(sqlShape("SELECT t1.a FROM tbl_2 WHERE x = 'it''s' AND y = 3.5e2 AND z = 0xFF")).toBe(
      'SELECT t1.a FROM tbl_2 WHERE x = ? AND y = ? AND z = ?',
    );
    expect(sqlShape('SELECT "a \\" b", -4, x\'00\'')).toBe('SELECT ?, ?, ?');
    const long = `INSERT INTO t VALUES ${Array.from({ length: 5000 }, (_, i) => `('${MARK}${i}')`).join(',')}`;
    const shape = sqlShape(long);
    expect(shape).not.toContain(MARK);
    expect(shape.length).toBeLessThanOrEqual(SQL_SHAPE_MAX_CHARS + 20);
    expect(shape).toContain(`[${long.length} chars]`);
  });

  it('shows an unterminated quote as a literal too', () => {
    expect(sqlShape(`SELECT '${MARK}`)).toBe('SELECT ?');
  });
});
