// The cache of the SQL guard's verdicts (src/tools/sql-verdict-cache.ts): a statement is parsed once per text and
// policy, the cache stays within its bounds whatever it is fed, and a verdict depends on nothing but its key.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkSelectOnly } from '../../../src/tools/sql-guard.js';
import { SqlParsePool } from '../../../src/tools/sql-parse-pool.js';
import { VerdictCache } from '../../../src/tools/sql-verdict-cache.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('VerdictCache', () => {
  it('returns what was stored, as a copy', () => {
    const cache = new VerdictCache();
    cache.set('a', { ok: true, tables: ['orders'], sql: 'SELECT 1' });
    const hit = cache.get('a');
    expect(hit).toEqual({ ok: true, tables: ['orders'], sql: 'SELECT 1' });
    if (hit?.ok) hit.tables.push('customers');
    expect(cache.get('a')).toEqual({ ok: true, tables: ['orders'], sql: 'SELECT 1' });
    expect(cache.get('b')).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new VerdictCache({ maxEntries: 3 });
    for (const key of ['a', 'b', 'c']) cache.set(key, { ok: false, reason: key });
    cache.get('a');
    cache.set('d', { ok: false, reason: 'd' });
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((key) => cache.get(key)?.ok)).toEqual([false, false, false]);
  });

  it('keeps at most maxBytes, and never an entry larger than that alone', () => {
    const cache = new VerdictCache({ maxEntries: 1_000_000, maxBytes: 100_000 });
    for (let i = 0; i < 10_000; i += 1) {
      cache.set(`SELECT ${i} ${'x'.repeat(1_000)}`, { ok: false, reason: `refused ${i}` });
      expect(cache.heldBytes).toBeLessThanOrEqual(100_000);
    }
    expect(cache.size).toBeGreaterThan(10);
    expect(cache.size).toBeLessThan(100);
    expect(cache.get(`SELECT 9999 ${'x'.repeat(1_000)}`)).toBeDefined();
    cache.set('y'.repeat(60_000), { ok: false, reason: 'huge' });
    expect(cache.get('y'.repeat(60_000))).toBeUndefined();
  });

  it('keys the allowlist exactly as given', () => {
    expect(VerdictCache.key('SELECT 1', undefined)).not.toBe(VerdictCache.key('SELECT 1', []));
    expect(VerdictCache.key('SELECT 1', ['a', 'b'])).not.toBe(VerdictCache.key('SELECT 1', ['b', 'a']));
    expect(VerdictCache.key('SELECT 1', ['a,b'])).not.toBe(VerdictCache.key('SELECT 1', ['a', 'b']));
  });
});

describe('checkSelectOnly with the cache', () => {
  it('parses a statement once, however often it is checked', async () => {
    const parse = vi.spyOn(SqlParsePool.prototype, 'parse');
    const sql = `SELECT status, COUNT(*) AS n FROM orders WHERE id > ${Math.floor(Math.random() * 1e9)} GROUP BY status`;
    const first = await checkSelectOnly(sql);
    expect(first).toMatchObject({ ok: true, tables: ['orders'] });
    for (let i = 0; i < 5; i += 1) expect(await checkSelectOnly(sql)).toEqual(first);
    expect(parse).toHaveBeenCalledTimes(1);
    // A different text is a different statement, even by one space.
    await checkSelectOnly(`${sql} `);
    expect(parse).toHaveBeenCalledTimes(2);
  });

  it("gives a refusal that names only the query and its own policy, never another job's", async () => {
    const parse = vi.spyOn(SqlParsePool.prototype, 'parse');
    const sql = `SELECT name FROM secret_payroll WHERE id = ${Math.floor(Math.random() * 1e9)}`;
    const open = await checkSelectOnly(sql, { allowedTables: ['secret_payroll'] });
    expect(open.ok).toBe(true);
    const closed = await checkSelectOnly(sql, { allowedTables: ['orders', 'customers'] });
    expect(closed).toEqual({
      ok: false,
      reason: 'Table secret_payroll is not in the allowed tables: orders, customers.',
    });
    expect(await checkSelectOnly(sql, { allowedTables: ['orders', 'customers'] })).toEqual(closed);
    expect(await checkSelectOnly(sql, { allowedTables: ['secret_payroll'] })).toEqual(open);
    expect(parse).toHaveBeenCalledTimes(2);
  });

  it('caches a refusal of the parser as it is', async () => {
    const parse = vi.spyOn(SqlParsePool.prototype, 'parse');
    const sql = `SELECT FROM orders WHERE id = ${Math.floor(Math.random() * 1e9)}`;
    const first = await checkSelectOnly(sql);
    expect(first.ok).toBe(false);
    expect(await checkSelectOnly(sql)).toEqual(first);
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it('does not cache a parse that ran out of time: that is the machine, not the query', async () => {
    const parse = vi.spyOn(SqlParsePool.prototype, 'parse').mockResolvedValue({ kind: 'timeout' });
    const sql = `SELECT id FROM orders WHERE id = ${Math.floor(Math.random() * 1e9)}`;
    expect(await checkSelectOnly(sql)).toMatchObject({ ok: false, reason: /too complex to check/ });
    parse.mockRestore();
    const parseAgain = vi.spyOn(SqlParsePool.prototype, 'parse');
    expect(await checkSelectOnly(sql)).toMatchObject({ ok: true });
    expect(parseAgain).toHaveBeenCalledTimes(1);
  });

  it("never answers a near-twin of a cached text with the twin's verdict", async () => {
    // Each pair differs only where the guard looks: a trailing `;` inside the accepted comment, the bytes of a
    // comment, a look-alike letter in a table name, a non-breaking space (a name character to the server).
    const n = Math.floor(Math.random() * 1e9);
    const policy = { allowedTables: ['orders'] };
    const noted = `SELECT id FROM orders WHERE id = ${n} -- note`;
    const lookAlike = `SELECT id FROM \u043erders WHERE id = ${n}`;
    const nbsp = `WITH c\u00a0 AS (SELECT 1 AS x) SELECT x FROM c WHERE x < ${n}`;
    const pairs: [string, string][] = [
      [noted, `${noted};`],
      [`SELECT id FROM orders WHERE id = ${n} /* a */`, `SELECT id FROM orders WHERE id = ${n} /*! a */`],
      [`SELECT id FROM orders WHERE id = ${n}`, lookAlike],
      [`WITH c AS (SELECT 1 AS x) SELECT x FROM c WHERE x < ${n}`, nbsp],
    ];
    for (const [first, twin] of pairs) {
      const cached = await checkSelectOnly(first, policy);
      expect(await checkSelectOnly(first, policy)).toEqual(cached);
      const verdict = await checkSelectOnly(twin, policy);
      expect(verdict, twin).not.toEqual(cached);
    }
    // The accepted ones and what runs: the comment cut off, the rest as written.
    expect(await checkSelectOnly(noted, policy)).toEqual({
      ok: true,
      tables: ['orders'],
      sql: `SELECT id FROM orders WHERE id = ${n} `,
    });
    expect(await checkSelectOnly(lookAlike, policy)).toMatchObject({ ok: false, reason: /\u043erders/ });
    expect(await checkSelectOnly(nbsp, policy)).toMatchObject({ ok: false, reason: /Table c / });
  });

  it('does not store what is refused before any work (too long, not a string)', async () => {
    const parse = vi.spyOn(SqlParsePool.prototype, 'parse');
    const long = `SELECT '${'x'.repeat(9_000)}'`;
    expect((await checkSelectOnly(long)).ok).toBe(false);
    expect((await checkSelectOnly(42 as unknown as string)).ok).toBe(false);
    expect(parse).not.toHaveBeenCalled();
  });
});
