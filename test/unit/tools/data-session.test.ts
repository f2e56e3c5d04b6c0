// The screen that decides whether a statement may run on a pooled connection as it is (one round trip) or needs
// a reset session and a connection dropped after it (src/tools/data-session.ts): every statement that can leave
// something in its session, or read what an earlier one left, is screened out, whatever the SQL guard says;
// and the guard refuses each of them too (two independent layers, docs/sql-safety.md).
import { describe, expect, it } from 'vitest';
import { isSessionNeutral, SessionSettingsCache, statementText } from '../../../src/tools/data-session.js';
import { checkSelectOnly } from '../../../src/tools/sql-guard.js';

/** Statements with a session effect, or that read the previous statement's leftovers. */
const TOUCHING = [
  // Statements other than SELECT.
  "SET SESSION sql_mode = 'ANSI_QUOTES'",
  'SET NAMES latin1',
  'SET autocommit = 0',
  'SET STATEMENT max_statement_time=0 FOR SELECT 1',
  "PREPARE p FROM 'SELECT 1'",
  'EXECUTE p',
  'HANDLER orders OPEN',
  'USE information_schema',
  'START TRANSACTION',
  'BEGIN',
  "XA START 'x'",
  'LOCK TABLES orders READ',
  'CREATE TEMPORARY TABLE t AS SELECT 1',
  'DO GET_LOCK(1, 0)',
  'SHOW WARNINGS',
  'GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT',
  // Variables and INTO.
  'SELECT @x := 1',
  'SELECT 1 INTO @x',
  '(SELECT 1) INTO @x',
  'SELECT @@warning_count',
  "SELECT * FROM orders INTO OUTFILE '/tmp/x'",
  // Functions with a session effect, however written.
  "SELECT GET_LOCK('x', 0)",
  "select get_lock ('x', 0)",
  "SELECT\tGet_Lock('x',0)",
  "SELECT 1 /*!, GET_LOCK('x', 0) */",
  "WITH a AS (SELECT GET_LOCK('x', 0) AS g) SELECT g FROM a",
  "SELECT RELEASE_LOCK('x')",
  'SELECT RELEASE_ALL_LOCKS()',
  'SELECT LAST_INSERT_ID(42)',
  'SELECT NEXTVAL(s), SETVAL(s, 1), LASTVAL(s)',
  'SELECT NEXT VALUE FOR s',
  'SELECT PREVIOUS VALUE FOR s',
  "SELECT service_get_write_locks('ns', 'l', 0)",
  "SELECT version_tokens_lock_exclusive('t', 0)",
  // Readers of the previous statement's leftovers.
  'SELECT FOUND_ROWS()',
  'SELECT ROW_COUNT()',
  "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'LAST_QUERY_COST'",
  'SELECT * FROM performance_schema.status_by_thread',
];

describe('isSessionNeutral', () => {
  it.each(TOUCHING)('%s: screened out, and refused by the guard', async (sql) => {
    expect(isSessionNeutral(sql)).toBe(false);
    expect((await checkSelectOnly(sql)).ok).toBe(false);
  });

  it.each([
    'SELECT 1',
    '  (SELECT id FROM orders) UNION (SELECT id FROM customers)',
    'WITH t AS (SELECT 1 AS a) SELECT a FROM t',
    'SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n DESC',
    // Names that contain a screened word are names.
    'SELECT row_counter, lock_id, set_name FROM orders',
  ])('%s: neutral', (sql) => {
    expect(isSessionNeutral(sql)).toBe(true);
  });

  it("screens RAND(): the session's generator carries one user's calls into the next one's values", () => {
    expect(isSessionNeutral('SELECT id FROM orders ORDER BY RAND() LIMIT 5')).toBe(false);
    expect(isSessionNeutral('SELECT brand, operand FROM products')).toBe(true);
  });

  it('errs towards not neutral: a screened word inside a string is enough', () => {
    expect(isSessionNeutral("SELECT id FROM orders WHERE note = 'goes into stock'")).toBe(false);
    expect(isSessionNeutral("SELECT 'a@b.c'")).toBe(false);
  });
});

describe('statementText', () => {
  it('binds the limits, READ ONLY and UTC to the statement on MariaDB', () => {
    expect(statementText('mariadb', 'SELECT 1', { timeoutMs: 1_500, fetch: 11 })).toBe(
      "SET STATEMENT max_statement_time=1.500, sql_select_limit=11, tx_read_only=1, time_zone='+00:00' FOR SELECT 1",
    );
    expect(statementText('mysql', 'SELECT 1', { timeoutMs: 1_500, fetch: 11 })).toBe('SELECT 1');
  });
});

describe('SessionSettingsCache', () => {
  it('asks for a SET once per connection and setting, again after a reset', () => {
    const cache = new SessionSettingsCache();
    const a = {};
    const b = {};
    expect(cache.needed(a, 'SET x')).toBe('SET x');
    cache.record(a, 'SET x');
    expect(cache.needed(a, 'SET x')).toBeUndefined();
    expect(cache.needed(b, 'SET x')).toBe('SET x');
    expect(cache.needed(a, 'SET y')).toBe('SET y');
    cache.forget(a);
    expect(cache.needed(a, 'SET x')).toBe('SET x');
  });
});
