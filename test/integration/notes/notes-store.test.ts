// The notes store against the real MariaDB/MySQL, in a database of its own (af_test_notes_<random>) dropped at the
// end: notes are added once per text, recalled only for their agent and tenant, by FULLTEXT relevance (or by
// embedding similarity) × weight with the agent's other notes after, never once expired, weighed down and dropped,
// listed and forgotten. With no server every test fails, none is skipped.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { NOTE_MAX_CHARS, type NoteDraft } from '../../../src/notes/note.js';
import { MysqlNoteStore, noteIdOf, noteTextHash } from '../../../src/notes/notes-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_notes_${randomBytes(4).toString('hex')}`;
const T0 = new Date('2026-03-01T09:00:00.000Z');
const DAY = 86_400_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

let pool: Pool;
let clock = T0;
let store: MysqlNoteStore;

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new MysqlNoteStore(pool, { now: () => clock });
});

afterAll(async () => {
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

let agents = 0;
/** An agent of its own per test: the tests share one database. */
const newAgent = () => `agent-${++agents}-${randomBytes(3).toString('hex')}`;

function draft(agent: string, text: string, overrides: Partial<NoteDraft> = {}): NoteDraft {
  return {
    agent,
    tenant: '',
    kind: 'correction',
    text,
    sourceJobId: 'job-1',
    sourceStep: 2,
    expiresAt: at(30 * DAY),
    ...overrides,
  };
}

const texts = (notes: { text: string }[]) => notes.map((note) => note.text);

describe('MysqlNoteStore.add and get', () => {
  it('stores a note with its source, and answers its id', async () => {
    clock = T0;
    const agent = newAgent();
    const [id] = await store.add([
      draft(agent, 'orders has no column "revenue"; its total is "amount_usd".'),
    ]);
    expect(id).toBe(
      noteIdOf(agent, '', noteTextHash('orders has no column "revenue"; its total is "amount_usd".')),
    );
    expect(await store.get(id!)).toEqual({
      id,
      agent,
      tenant: '',
      kind: 'correction',
      text: 'orders has no column "revenue"; its total is "amount_usd".',
      sourceJobId: 'job-1',
      sourceStep: 2,
      expiresAt: at(30 * DAY),
      createdAt: T0,
      lastUsedAt: null,
      useCount: 0,
      weight: 1,
    });
    expect(await store.get('note_missing')).toBeNull();
  });

  it('de-duplicates by agent, tenant and text (whitespace aside), renewing the expiry, never shortening it', async () => {
    clock = T0;
    const agent = newAgent();
    const [first] = await store.add([draft(agent, 'the  fiscal year starts in April')]);
    clock = at(DAY);
    const again = await store.add([
      draft(agent, 'the fiscal year starts in April\n', { expiresAt: at(40 * DAY), sourceJobId: 'job-2' }),
      draft(agent, 'the fiscal year starts in April', { expiresAt: at(5 * DAY) }),
    ]);
    expect(again).toEqual([first, first]);
    const note = await store.get(first!);
    expect(note).toMatchObject({ expiresAt: at(40 * DAY), sourceJobId: 'job-1', createdAt: T0 });
    expect(await store.list({ agent })).toHaveLength(1);
    // Another tenant's and another agent's copies of the same text are notes of their own.
    const [acme] = await store.add([draft(agent, 'the fiscal year starts in April', { tenant: 'acme' })]);
    const [other] = await store.add([draft(newAgent(), 'the fiscal year starts in April')]);
    expect(new Set([first, acme, other]).size).toBe(3);
  });

  it('stores the text as given, bounded, without control characters but newline', async () => {
    clock = T0;
    const agent = newAgent();
    const [id] = await store.add([
      draft(agent, 'line one\r\nline\ttwo\u0000\u001b[31m red \u202e' + 'x'.repeat(600)),
    ]);
    const note = await store.get(id!);
    expect(note?.text.startsWith('line one\nline two[31m red x')).toBe(true);
    expect(note?.text).toHaveLength(NOTE_MAX_CHARS);
    // eslint-disable-next-line no-control-regex -- what must not be stored
    expect(note?.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u202e]/);
  });

  it('refuses a draft it cannot store, naming what is wrong', async () => {
    const agent = newAgent();
    await expect(store.add([draft('bad agent', 'x')])).rejects.toMatchObject({
      code: 'note_invalid',
      message: 'note 0: agent must be an agent name',
    });
    await expect(store.add([draft(agent, 'x'), draft(agent, 'y', { tenant: 'a b' })])).rejects.toThrow(
      "note 1: tenant must be a tenant name or '' for none",
    );
    await expect(store.add([draft(agent, ' \u0000 ')])).rejects.toThrow('note 0: text is empty');
    await expect(store.add([draft(agent, 'x', { embedding: [1, Number.NaN] })])).rejects.toThrow(
      'note 0: embedding must be',
    );
    expect(await store.list({ agent })).toEqual([]);
  });
});

describe('MysqlNoteStore.recall', () => {
  it("never answers another tenant's notes, nor a tenant's notes for none, nor another agent's", async () => {
    clock = T0;
    const agent = newAgent();
    await store.add([
      draft(agent, 'acme keeps revenue in orders.amount_usd', { tenant: 'acme' }),
      draft(agent, 'globex keeps revenue in sales.total', { tenant: 'globex' }),
      draft(agent, 'revenue is in the finance schema'),
      draft(newAgent(), 'revenue of another agent', { tenant: 'acme' }),
    ]);
    const recall = (tenant: string, text: string) => store.recall({ agent, tenant, text, limit: 10 });
    expect(texts(await recall('acme', 'revenue'))).toEqual(['acme keeps revenue in orders.amount_usd']);
    expect(texts(await recall('acme', 'globex sales total'))).toEqual([
      'acme keeps revenue in orders.amount_usd',
    ]);
    expect(texts(await recall('globex', 'revenue'))).toEqual(['globex keeps revenue in sales.total']);
    expect(texts(await recall('', 'acme globex'))).toEqual(['revenue is in the finance schema']);
    expect(await recall('ACME', 'revenue')).toEqual([]);
    expect(await recall('acme ', 'revenue')).toEqual([]);
    expect(await recall('initech', 'revenue')).toEqual([]);
    // The same with embeddings: the scan is of the scope too.
    expect(
      texts(await store.recall({ agent, tenant: 'globex', text: '', embedding: [1, 0], limit: 10 })),
    ).toEqual(['globex keeps revenue in sales.total']);
  });

  it('ranks FULLTEXT matches by relevance × weight, then fills with the other notes', async () => {
    clock = T0;
    const agent = newAgent();
    const ids = await store.add([
      draft(agent, 'the customers table keys customers by customer_id'),
      draft(agent, 'shipments are late when delivered_at exceeds promised_at'),
      draft(agent, 'invoices are issued monthly; invoices table has issued_at'),
      draft(agent, 'weather data lives elsewhere'),
    ]);
    const recall = (text: string, limit = 10) => store.recall({ agent, tenant: '', text, limit });
    const invoices = await recall('which invoices were issued last month?');
    expect(invoices[0]?.text).toBe('invoices are issued monthly; invoices table has issued_at');
    expect(invoices).toHaveLength(4);
    expect(texts(await recall('late shipments', 1))).toEqual([
      'shipments are late when delivered_at exceeds promised_at',
    ]);
    // Weight counts: two notes FULLTEXT scores alike are ranked by their weights.
    const both = 'customers invoices';
    expect((await recall(both, 2)).map((note) => note.id).sort()).toEqual([ids[0], ids[2]].sort());
    await store.weighDown([ids[0]!]);
    expect((await recall(both, 2)).map((note) => note.id)).toEqual([ids[2], ids[0]]);
    await store.weighDown([ids[2]!]);
    await store.weighDown([ids[2]!]);
    expect((await recall(both, 2)).map((note) => note.id)).toEqual([ids[0], ids[2]]);
  });

  it('falls back to the most used, heaviest notes when FULLTEXT matches nothing (stopwords, short words)', async () => {
    clock = T0;
    const agent = newAgent();
    const [a, b, c] = await store.add([
      draft(agent, 'KPI: use the v2 view'),
      draft(agent, 'fx rates: EUR'),
      draft(agent, 'db is pg'),
    ]);
    clock = at(1_000);
    await store.markUsed([a!]);
    clock = at(2_000);
    await store.weighDown([c!]);
    const fallback = await store.recall({ agent, tenant: '', text: 'the of and it is', limit: 10 });
    expect(fallback.map((note) => note.id)).toEqual([a, b, c]);
    expect(await store.recall({ agent, tenant: '', text: '', limit: 2 })).toHaveLength(2);
  });

  it('ranks by exact cosine × weight when the query has an embedding; notes without one fill the places left', async () => {
    clock = T0;
    const agent = newAgent();
    const ids = await store.add([
      draft(agent, 'north', { embedding: [1, 0, 0] }),
      draft(agent, 'north-east', { embedding: [0.7, 0.7, 0] }),
      draft(agent, 'up', { embedding: [0, 0, 1] }),
      draft(agent, 'another model', { embedding: [1, 0] }),
      draft(agent, 'no embedding at all'),
    ]);
    const recall = (embedding: number[], limit: number) =>
      store.recall({ agent, tenant: '', text: 'unrelated words', embedding, limit });
    expect(texts(await recall([1, 0.1, 0], 2))).toEqual(['north', 'north-east']);
    expect(texts(await recall([0, 0.2, 1], 1))).toEqual(['up']);
    const all = texts(await recall([0.6, 0.8, 0], 10));
    expect(all.slice(0, 3)).toEqual(['north-east', 'north', 'up']);
    expect(all.slice(3).sort()).toEqual(['another model', 'no embedding at all']);
    await store.weighDown([ids[1]!]);
    expect(texts(await recall([0.6, 0.8, 0], 1))).toEqual(['north']);
  });

  it('scans at most maxScan notes, the most recent', async () => {
    const agent = newAgent();
    const small = new MysqlNoteStore(pool, { now: () => clock, maxScan: 2 });
    clock = T0;
    await store.add([draft(agent, 'old best match', { embedding: [1, 0] })]);
    clock = at(1_000);
    await store.add([
      draft(agent, 'newer', { embedding: [0, 1] }),
      draft(agent, 'newest', { embedding: [0.1, 1] }),
    ]);
    const [best] = await small.recall({ agent, tenant: '', text: '', embedding: [1, 0], limit: 1 });
    expect(best?.text).toBe('newest');
  });

  it('never answers an expired note; one written again after its expiry starts afresh', async () => {
    clock = T0;
    const agent = newAgent();
    const [id] = await store.add([draft(agent, 'expires soon', { expiresAt: at(DAY) })]);
    await store.weighDown([id!]);
    expect(await store.recall({ agent, tenant: '', text: 'expires soon', limit: 5 })).toHaveLength(1);
    clock = at(DAY);
    expect(await store.recall({ agent, tenant: '', text: 'expires soon', limit: 5 })).toEqual([]);
    expect(await store.recall({ agent, tenant: '', text: '', embedding: [1], limit: 5 })).toEqual([]);
    expect(await store.list({ agent })).toEqual([]);
    expect(await store.get(id!)).toMatchObject({ id, weight: 0.5 });
    await store.add([draft(agent, 'expires soon', { expiresAt: at(3 * DAY) })]);
    expect(await store.get(id!)).toMatchObject({ id, weight: 1, createdAt: at(DAY), expiresAt: at(3 * DAY) });
  });
});

describe('MysqlNoteStore.markUsed and weighDown', () => {
  it('counts uses and keeps the last time', async () => {
    clock = T0;
    const agent = newAgent();
    const [id] = await store.add([draft(agent, 'used twice')]);
    clock = at(1_000);
    await store.markUsed([id!, id!]);
    clock = at(2_000);
    await store.markUsed([id!, 'note_missing']);
    await store.markUsed([]);
    expect(await store.get(id!)).toMatchObject({ useCount: 2, lastUsedAt: at(2_000) });
  });

  it('halves the weight per failed run and deletes a note below 0.2 (the third failure)', async () => {
    clock = T0;
    const agent = newAgent();
    const [id, other] = await store.add([draft(agent, 'doubtful'), draft(agent, 'fine')]);
    await store.weighDown([id!]);
    expect((await store.get(id!))?.weight).toBe(0.5);
    await store.weighDown([id!, id!]);
    expect((await store.get(id!))?.weight).toBe(0.25);
    await store.weighDown([id!]);
    expect(await store.get(id!)).toBeNull();
    expect((await store.get(other!))?.weight).toBe(1);
    await store.weighDown([]);
  });
});

describe('MysqlNoteStore.list, forget and forgetAll', () => {
  it('lists live notes newest first, by agent and tenant, up to the limit', async () => {
    const agent = newAgent();
    for (const [i, tenant] of ['', 'acme', 'acme'].entries()) {
      clock = at(i * 1_000);
      await store.add([draft(agent, `note ${i}`, { tenant })]);
    }
    expect(texts(await store.list({ agent }))).toEqual(['note 2', 'note 1', 'note 0']);
    expect(texts(await store.list({ agent, tenant: 'acme', limit: 1 }))).toEqual(['note 2']);
    expect(texts(await store.list({ agent, tenant: '' }))).toEqual(['note 0']);
    expect((await store.list({ limit: 1_000_000 })).length).toBeGreaterThanOrEqual(3);
  });

  it('forgets one note, or every note of an agent (of one tenant)', async () => {
    clock = T0;
    const agent = newAgent();
    const bystander = newAgent();
    const [one] = await store.add([
      draft(agent, 'one'),
      draft(agent, 'two'),
      draft(agent, 'three', { tenant: 'acme' }),
      draft(agent, 'four', { tenant: 'acme' }),
      draft(bystander, 'five', { tenant: 'acme' }),
    ]);
    expect(await store.forget(one!)).toBe(true);
    expect(await store.forget(one!)).toBe(false);
    expect(await store.forgetAll({ agent, tenant: 'acme' })).toBe(2);
    expect(texts(await store.list({ agent }))).toEqual(['two']);
    expect(await store.forgetAll({ agent })).toBe(1);
    expect(await store.list({ agent })).toEqual([]);
    expect(texts(await store.list({ agent: bystander }))).toEqual(['five']);
  });

  it('lists and forgets exactly one scope: a name with a trailing space is no neighbour of the name without', async () => {
    // The columns' collation pads with spaces ('acme ' = 'acme'): a scope no note can have must read and remove none.
    clock = T0;
    const agent = newAgent();
    await store.add([draft(agent, 'kept for acme', { tenant: 'acme' })]);
    for (const filter of [
      { agent, tenant: 'acme ' },
      { agent: `${agent} `, tenant: 'acme' },
      { agent: `${agent} ` },
    ]) {
      expect(await store.list(filter)).toEqual([]);
      expect(await store.forgetAll(filter)).toBe(0);
    }
    expect(texts(await store.list({ agent, tenant: 'acme' }))).toEqual(['kept for acme']);
  });

  it('keeps the FULLTEXT index on text and the keys recall reads', async () => {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT INDEX_NAME AS name, INDEX_TYPE AS type FROM information_schema.STATISTICS
       WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'agent_notes' AND SEQ_IN_INDEX = 1`,
      [DATABASE],
    );
    expect(rows.map((row) => `${row['name']}:${row['type']}`).sort()).toEqual([
      'PRIMARY:BTREE',
      'ft_agent_notes_text:FULLTEXT',
      'idx_agent_notes_created:BTREE',
      'idx_agent_notes_scope_expiry:BTREE',
      'uq_agent_notes_text:BTREE',
    ]);
  });
});
