// The console's read-only Notes page through the board (its logins, as every console page) against a real migrated
// MariaDB store holding notes written with MysqlNoteStore.add: newest first, by agent and tenant, each text escaped
// (a note's <script> is text), a bad filter refused naming it, no form to forget anything, 401 without a login.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBoardApp } from '../../../producers/board-app.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import type { NoteDraft } from '../../../src/notes/note.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';

const VIEWER = { user: 'viewer', password: randomBytes(12).toString('hex') };
const ADMIN = { user: 'admin', password: randomBytes(12).toString('hex') };
const AGENT = `analyst-${randomBytes(3).toString('hex')}`;

let ns: FleetNamespace;
let pool: Pool;
let consoleStore: ConsoleStore;
let server: Server;
let base = '';
const ids: string[] = [];

const basic = (login: { user: string; password: string }) =>
  `Basic ${Buffer.from(`${login.user}:${login.password}`).toString('base64')}`;
const getPage = (path: string, login: { user: string; password: string } | null = VIEWER) =>
  fetch(`${base}${path}`, { headers: login ? { authorization: basic(login) } : {} });

function draft(text: string, overrides: Partial<NoteDraft> = {}): NoteDraft {
  return {
    agent: AGENT,
    tenant: '',
    kind: 'correction',
    text,
    sourceJobId: 'job-<9>',
    sourceStep: 3,
    expiresAt: new Date(Date.now() + 86_400_000),
    ...overrides,
  };
}

beforeAll(async () => {
  ns = createNamespace('notes-page');
  pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  const store = new MysqlNoteStore(pool);
  for (const one of [
    draft('orders has no column "revenue"'),
    draft('a customer wrote <script>alert(1)</script> & left', { tenant: 'acme', kind: 'fact' }),
  ]) {
    ids.push(...(await store.add([one])));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  consoleStore = new ConsoleStore(pool);
  server = createServer(
    createBoardApp({
      queues: [],
      user: VIEWER.user,
      password: VIEWER.password,
      admin: ADMIN,
      console: consoleStore,
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve) && server.closeAllConnections());
  await pool?.end();
  await ns?.cleanup();
});

describe('the Notes page', () => {
  it('lists an agent’s notes newest first, escaped, with their runs, to the viewer and the admin', async () => {
    for (const login of [VIEWER, ADMIN]) {
      const response = await getPage(`/console/notes?agent=${AGENT}`, login);
      expect(response.status).toBe(200);
      const html = await response.text();
      expect(html.indexOf(ids[1]!)).toBeGreaterThan(0);
      expect(html.indexOf(ids[1]!)).toBeLessThan(html.indexOf(ids[0]!));
      expect(html).toContain('a customer wrote &lt;script&gt;alert(1)&lt;/script&gt; &amp; left');
      expect(html).not.toContain('<script>');
      expect(html).toContain('orders has no column &quot;revenue&quot;');
      expect(html).toContain('<a href="/console/runs/job-%3C9%3E">job-&lt;9&gt;</a> step 3');
      expect(html).toContain('<a href="/console/notes">Notes</a>');
      // Read only: nothing on the page posts.
      expect(html).not.toContain('method="post"');
    }
  });

  it('filters by tenant, and refuses a bad filter naming it', async () => {
    const acme = await (await getPage(`/console/notes?agent=${AGENT}&tenant=acme`)).text();
    expect(acme).toContain(ids[1]!);
    expect(acme).not.toContain(ids[0]!);
    const other = await (await getPage('/console/notes?agent=someone-else')).text();
    expect(other).toContain('no notes');
    const bad = await getPage('/console/notes?agent=%3Cb%3E');
    expect(bad.status).toBe(400);
    const html = await bad.text();
    expect(html).toContain('agent: must be an agent name');
    expect(html).toContain('value="&lt;b&gt;"');
  });

  it('asks for a login', async () => {
    expect((await getPage('/console/notes', null)).status).toBe(401);
  });
});
