// The notes routes of the HTTP API and FleetNotes, the client library's notes client, against a real migrated
// MariaDB store holding notes (written with MysqlNoteStore.add, as a worker keeps them) and the API as
// producers/api.ts builds it (StoreNotes over MYSQL_URL): 401 without the token, list filters and refusals naming
// the parameter, one note, forgetting one and an agent's, the CLI's JSON of a note, and 503 without a store.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Pool } from 'mysql2/promise';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../../producers/http-api.js';
import { StoreNotes } from '../../../producers/store-notes.js';
import {
  FleetApiAuthError,
  FleetApiError,
  FleetNotes,
  NoteNotFoundError,
  NotesRefusedError,
} from '../../../src/client.js';
import type { NoteDraft } from '../../../src/notes/note.js';
import { noteView } from '../../../src/notes/note-view.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';

const TOKEN = `ops-${randomBytes(16).toString('hex')}`;
const DAY = 86_400_000;
const logger = pino({ level: 'silent' });

let ns: FleetNamespace;
let pool: Pool;
let store: MysqlNoteStore;
let storeNotes: StoreNotes;
let unmigrated: FleetNamespace;
let unmigratedNotes: StoreNotes;
let base = '';
const servers: Server[] = [];

async function listen(app: Express): Promise<string> {
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const call = (method: string, path: string, token: string | null = TOKEN, url = base) =>
  fetch(`${url}${path}`, { method, headers: token === null ? {} : { authorization: `Bearer ${token}` } });

let agents = 0;
/** An agent of its own per test: the tests share one database. */
const newAgent = () => `agent-${++agents}-${randomBytes(3).toString('hex')}`;

function draft(agent: string, text: string, overrides: Partial<NoteDraft> = {}): NoteDraft {
  return {
    agent,
    tenant: '',
    kind: 'correction',
    text,
    sourceJobId: 'job-7',
    sourceStep: 2,
    expiresAt: new Date(Date.now() + 30 * DAY),
    ...overrides,
  };
}

/** Notes added one at a time, so `createdAt` (milliseconds) orders them: newest last here, first in a list. */
async function addInOrder(drafts: NoteDraft[]): Promise<string[]> {
  const ids: string[] = [];
  for (const one of drafts) {
    ids.push(...(await store.add([one])));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return ids;
}

beforeAll(async () => {
  ns = createNamespace('notes-api');
  pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  store = new MysqlNoteStore(pool);
  storeNotes = new StoreNotes(ns.mysqlUrl);
  base = await listen(createApiServer({ client: ns.client, token: TOKEN, notes: storeNotes, logger }));
  unmigrated = createNamespace('notes-api-bare');
  unmigratedNotes = new StoreNotes(unmigrated.mysqlUrl);
}, 60_000);

afterAll(async () => {
  await Promise.all(
    servers.map((server) => new Promise((resolve) => server.close(resolve) && server.closeAllConnections())),
  );
  await storeNotes?.close();
  await unmigratedNotes?.close();
  await pool?.end();
  await ns?.cleanup();
  await unmigrated?.cleanup();
});

describe('the notes routes', () => {
  it('answer 401 without a token or with a wrong one, and forget nothing', async () => {
    const agent = newAgent();
    const [id] = await store.add([draft(agent, 'orders has no column "revenue"')]);
    for (const token of [null, 'nope', `${TOKEN}x`]) {
      expect((await call('GET', `/v1/notes?agent=${agent}`, token)).status).toBe(401);
      expect((await call('GET', `/v1/notes/${id}`, token)).status).toBe(401);
      const forgot = await call('DELETE', `/v1/notes/${id}`, token);
      expect(forgot.status).toBe(401);
      expect(await forgot.json()).toEqual({ error: 'unauthorized' });
      expect((await call('DELETE', `/v1/notes?agent=${agent}`, token)).status).toBe(401);
    }
    expect(await store.get(id!)).not.toBeNull();
  });

  it('list live notes newest first, by agent, tenant and limit, as the CLI prints them', async () => {
    const agent = newAgent();
    const [older, newer, tenant] = await addInOrder([
      draft(agent, 'the first note'),
      draft(agent, 'the second note', { embedding: [0.1, 0.2, 0.3] }),
      draft(agent, 'a note of acme', { tenant: 'acme' }),
    ]);
    await store.add([draft(agent, 'an expired note', { expiresAt: new Date(Date.now() - 1_000) })]);
    const ids = async (query: string) => {
      const response = await call('GET', `/v1/notes?${query}`);
      expect(response.status).toBe(200);
      return ((await response.json()) as { notes: { id: string }[] }).notes.map((note) => note.id);
    };
    expect(await ids(`agent=${agent}`)).toEqual([tenant, newer, older]);
    expect(await ids(`agent=${agent}&tenant=`)).toEqual([newer, older]);
    expect(await ids(`agent=${agent}&tenant=acme`)).toEqual([tenant]);
    expect(await ids(`agent=${agent}&limit=1`)).toEqual([tenant]);
    // The JSON of a note is the command's own (one function for both), its embedding's size but not its numbers.
    const listed = (await (await call('GET', `/v1/notes?agent=${agent}&tenant=`)).json()) as {
      notes: unknown[];
    };
    expect(listed.notes[0]).toEqual(noteView((await store.get(newer!))!));
    expect(listed.notes[0]).toMatchObject({ embeddingDimensions: 3, source: { jobId: 'job-7', step: 2 } });
  });

  it('refuse a bad or unknown query parameter, naming it', async () => {
    const refused = async (method: string, query: string) => {
      const response = await call(method, `/v1/notes?${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { error: string; issues: { path: string; message: string }[] };
      expect(body.error).toBe('invalid_query');
      return body.issues.map((issue) => issue.path);
    };
    expect(await refused('GET', 'limit=0')).toEqual(['limit']);
    expect(await refused('GET', 'limit=many')).toEqual(['limit']);
    expect(await refused('GET', 'agent=no%20spaces')).toEqual(['agent']);
    expect(await refused('GET', 'tenant=%3Cb%3E')).toEqual(['tenant']);
    expect(await refused('GET', 'agent=a&agent=b')).toEqual(['agent']);
    expect(await refused('GET', 'state=live')).toEqual(['state']);
    // Forgetting all takes an agent: never every note of the fleet at once.
    expect(await refused('DELETE', '')).toEqual(['agent']);
    expect(await refused('DELETE', 'tenant=acme')).toEqual(['agent']);
    expect(await refused('DELETE', 'agent=a&limit=3')).toEqual(['limit']);
    const missing = await call('DELETE', '/v1/notes?tenant=acme');
    expect(await missing.json()).toMatchObject({
      issues: [{ path: 'agent', message: expect.stringMatching(/^is required/) }],
    });
  });

  it('read one note, forget it (204), then answer 404 to both', async () => {
    const agent = newAgent();
    const [id] = await store.add([draft(agent, 'a <script>alert(1)</script> note', { kind: 'fact' })]);
    const read = await call('GET', `/v1/notes/${id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, agent, tenant: '', kind: 'fact', useCount: 0, weight: 1 });
    const forgot = await call('DELETE', `/v1/notes/${id}`);
    expect(forgot.status).toBe(204);
    expect(await forgot.text()).toBe('');
    for (const method of ['GET', 'DELETE']) {
      const gone = await call(method, `/v1/notes/${id}`);
      expect(gone.status).toBe(404);
      expect(await gone.json()).toEqual({ error: 'not_found' });
      expect((await call(method, `/v1/notes/${'x'.repeat(41)}`)).status).toBe(404);
    }
  });

  it("forget an agent's notes, of one tenant or all, and no other agent's", async () => {
    const agent = newAgent();
    const other = newAgent();
    await store.add([
      draft(agent, 'one'),
      draft(agent, 'two', { tenant: 'acme' }),
      draft(agent, 'three', { tenant: 'globex' }),
      draft(other, 'kept'),
    ]);
    const forget = async (query: string) => {
      const response = await call('DELETE', `/v1/notes?${query}`);
      expect(response.status).toBe(200);
      return response.json();
    };
    expect(await forget(`agent=${agent}&tenant=acme`)).toEqual({ forgotten: 1 });
    expect(await forget(`agent=${agent}`)).toEqual({ forgotten: 2 });
    expect(await forget(`agent=${agent}`)).toEqual({ forgotten: 0 });
    expect((await store.list({ agent: other })).map((note) => note.text)).toEqual(['kept']);
  });

  it('answer 503 without a store, and with a store not migrated yet', async () => {
    const none = await listen(createApiServer({ client: ns.client, token: TOKEN, logger }));
    const bare = await listen(
      createApiServer({ client: ns.client, token: TOKEN, logger, notes: unmigratedNotes }),
    );
    for (const url of [none, bare]) {
      const response = await call('GET', '/v1/notes', TOKEN, url);
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ error: 'unavailable' });
      expect((await call('DELETE', '/v1/notes/note_x', TOKEN, url)).status).toBe(503);
    }
    // The token is checked first, store or not.
    expect((await call('GET', '/v1/notes', null, none)).status).toBe(401);
  });
});

describe('FleetNotes', () => {
  it('lists, reads and forgets, typed as the API answers', async () => {
    const notes = new FleetNotes({ url: `${base}/`, token: TOKEN });
    const agent = newAgent();
    const [a, b] = await store.add([draft(agent, 'alpha'), draft(agent, 'beta', { tenant: 'acme' })]);
    expect((await notes.list({ agent })).map((note) => note.id).sort()).toEqual([a, b].sort());
    expect((await notes.list({ agent, tenant: '' })).map((note) => note.text)).toEqual(['alpha']);
    expect(await notes.list({ agent, limit: 1 })).toHaveLength(1);
    const one = await notes.get(a!);
    expect(one).toEqual(noteView((await store.get(a!))!));
    await notes.forget(a!);
    await expect(notes.get(a!)).rejects.toBeInstanceOf(NoteNotFoundError);
    await expect(notes.forget(a!)).rejects.toThrow(/no such note \(404\)/);
    expect(await notes.forgetAll({ agent, tenant: 'acme' })).toBe(1);
    expect(await notes.list({ agent })).toEqual([]);
  });

  it('names what went wrong: a refused parameter, the token, an API without notes', async () => {
    const notes = new FleetNotes({ url: base, token: TOKEN });
    const refused = await notes.list({ limit: 5000 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NotesRefusedError);
    expect((refused as NotesRefusedError).issues.map((issue) => issue.path)).toEqual(['limit']);
    expect((refused as Error).message).toMatch(/^refused: limit: must be a whole number from 1 to 1000/);
    await expect(notes.forgetAll({ agent: 'bad agent' })).rejects.toThrow(/refused: agent: must be/);

    const wrong = new FleetNotes({ url: base, token: 'nope' });
    const denied = await wrong.list().catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(FleetApiAuthError);
    expect((denied as Error).message).not.toContain('nope');

    const none = await listen(createApiServer({ client: ns.client, token: TOKEN, logger }));
    const unavailable = await new FleetNotes({ url: none, token: TOKEN }).list().catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(FleetApiError);
    expect(unavailable).toMatchObject({ status: 503, code: 'unavailable' });
  });
});
