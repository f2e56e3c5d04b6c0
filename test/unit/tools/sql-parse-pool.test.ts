// The parser threads of the SQL guard: real worker threads running node-sql-parser, a real deadline.
import { afterAll, describe, expect, it } from 'vitest';
import { SqlParsePool } from '../../../src/tools/sql-parse-pool.js';

const pool = new SqlParsePool({ deadlineMs: 100 });
const SLOW = `SELECT ${'CAST(('.repeat(16)}1${') AS CHAR)'.repeat(16)}`;

afterAll(() => pool.close());

describe('SqlParsePool', () => {
  it('returns the AST and table list of a query, and the location of a syntax error', async () => {
    await pool.ready();
    const parsed = await pool.parse('SELECT name FROM customers');
    expect(parsed).toMatchObject({ kind: 'parsed', tableList: ['select::null::customers'] });
    expect(parsed.kind === 'parsed' && (parsed.ast as { type?: string }).type).toBe('select');

    const broken = await pool.parse('SELECT * FROM');
    expect(broken).toMatchObject({ kind: 'syntax_error', location: { start: { offset: 13 } } });
  });

  it('stops a parse at its deadline and answers the next one at once from the spare thread', async () => {
    await pool.ready();
    const started = performance.now();
    expect(await pool.parse(SLOW)).toEqual({ kind: 'timeout' });
    const stopped = performance.now() - started;
    expect(stopped).toBeGreaterThanOrEqual(95);
    expect(stopped).toBeLessThan(1_000);

    const next = performance.now();
    expect(await pool.parse('SELECT 1')).toMatchObject({ kind: 'parsed' });
    expect(performance.now() - next).toBeLessThan(150);
    // A new spare replaces the thread that was stopped.
    await pool.ready();
  });

  it('queues parses beyond the one running, in order', async () => {
    const outcomes = await Promise.all(
      [SLOW, 'SELECT 1', 'SELECT 2', SLOW, 'SELECT 3'].map((sql) => pool.parse(sql)),
    );
    expect(outcomes.map((o) => o.kind)).toEqual(['timeout', 'parsed', 'parsed', 'timeout', 'parsed']);
  });

  it('starts one thread at warm-up and its spares only at the first missed deadline', async () => {
    const lazy = new SqlParsePool({ deadlineMs: 100 });
    try {
      lazy.warmUp();
      expect(lazy.threadsStarted).toBe(1);
      expect(await lazy.parse('SELECT 1')).toMatchObject({ kind: 'parsed' });
      expect(lazy.threadsStarted).toBe(1);
      // The second try waits for a thread to start, and its deadline counts from when it has one.
      expect(await lazy.parse(SLOW)).toEqual({ kind: 'timeout' });
      expect(lazy.threadsStarted).toBe(3);
      await lazy.ready();
      const next = performance.now();
      expect(await lazy.parse('SELECT 2')).toMatchObject({ kind: 'parsed' });
      expect(performance.now() - next).toBeLessThan(150);
    } finally {
      await lazy.close();
    }
  });

  it('answers every parse after close without a thread', async () => {
    const closing = new SqlParsePool();
    const pending = closing.parse('SELECT 1');
    await closing.close();
    expect((await pending).kind).toMatch(/parsed|failed/);
    expect(await closing.parse('SELECT 1')).toEqual({ kind: 'failed', message: 'the parser pool is closed' });
  });
});
