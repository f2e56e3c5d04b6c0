// `npm run memory` as a process (`node --import tsx scripts/memory.ts`) against the real MariaDB, in a database
// of its own: it lists notes one JSON object a line (filtered by agent and tenant), shows one, forgets one or an
// agent's, exits 1 for a note that is not there and 2 for a bad argument it names. With no server every test
// fails, none is skipped.
import { spawn } from 'node:child_process';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import type { NoteDraft } from '../../../src/notes/note.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DAY = 86_400_000;

let ns: FleetNamespace;
let pool: Pool;
let store: MysqlNoteStore;

setupOrFail(async () => {
  ns = createNamespace('memory_cli');
  pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  store = new MysqlNoteStore(pool);
});

afterAll(async () => {
  await pool?.end();
  await ns?.cleanup();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function memory(args: string[], mysqlUrl = ns.mysqlUrl): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/memory.ts', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, MYSQL_URL: mysqlUrl, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lines = (run: Run) =>
  run.stdout
    .trimEnd()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

function draft(agent: string, tenant: string, text: string): NoteDraft {
  return {
    agent,
    tenant,
    kind: 'correction',
    text,
    sourceJobId: 'job-9',
    sourceStep: 3,
    expiresAt: new Date(Date.now() + 30 * DAY),
  };
}

describe('npm run memory', () => {
  it('lists notes one JSON object a line, by agent and tenant; shows one', async () => {
    const [hostile] = await store.add([
      draft('default', 'acme', 'orders has amount_usd\n\u001b[2J\u202e "quoted"'),
      draft('default', '', 'no tenant here'),
      draft('mailer', 'acme', 'another agent'),
    ]);
    const all = await memory(['list', '--agent', 'default']);
    expect(all.stderr).toBe('');
    expect(all.code).toBe(0);
    // One line per note: the newline, escape and override in the text are escaped, not written.
    expect(all.stdout.trimEnd().split('\n')).toHaveLength(2);
    // eslint-disable-next-line no-control-regex -- what must not reach the terminal
    expect(all.stdout).not.toMatch(/[\u001b\u202e]/);
    const acme = lines(await memory(['list', '--agent', 'default', '--tenant', 'acme']));
    expect(acme).toEqual([
      {
        id: hostile,
        agent: 'default',
        tenant: 'acme',
        kind: 'correction',
        text: 'orders has amount_usd\n[2J "quoted"',
        createdAt: expect.any(String),
        lastUsedAt: null,
        useCount: 0,
        weight: 1,
        expiresAt: expect.any(String),
        source: { jobId: 'job-9', step: 3 },
        embeddingDimensions: null,
      },
    ]);
    expect(lines(await memory(['list', '--tenant', '']))).toMatchObject([{ text: 'no tenant here' }]);
    expect(lines(await memory(['list', '--limit', '1']))).toHaveLength(1);
    const shown = await memory(['show', hostile!]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual(acme[0]);
  });

  it('forgets one note, then every note of an agent of one tenant, then of all', async () => {
    const [one, two] = await store.add([
      draft('forgetful', 'acme', 'one'),
      draft('forgetful', 'acme', 'two'),
      draft('forgetful', 'globex', 'three'),
      draft('forgetful', '', 'four'),
    ]);
    expect(await memory(['forget', one!])).toEqual({ code: 0, stdout: `forgot note ${one}\n`, stderr: '' });
    expect(await store.get(one!)).toBeNull();
    const again = await memory(['forget', one!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`memory: no note ${JSON.stringify(one)}\n`);
    expect((await memory(['forget', '--agent', 'forgetful', '--tenant', 'acme'])).stdout).toBe(
      'forgot 1 note(s) of agent forgetful of tenant acme\n',
    );
    expect(await store.get(two!)).toBeNull();
    expect((await memory(['forget', '--agent', 'forgetful'])).stdout).toBe(
      'forgot 2 note(s) of agent forgetful\n',
    );
    expect(await store.list({ agent: 'forgetful' })).toEqual([]);
  });

  it('exits 1 for a note it cannot show, 2 naming a bad argument, 1 on a database without the table', async () => {
    const missing = await memory(['show', 'note_missing']);
    expect(missing).toMatchObject({ code: 1, stdout: '', stderr: 'memory: no note "note_missing"\n' });
    const bad = await memory(['list', '--limit', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^memory: --limit must be a whole number from 1 to 1000\nusage: npm run memory/,
    );
    const tenant = await memory(['forget', '--agent', 'default', '--tenant', 'a b']);
    expect(tenant.code).toBe(2);
    expect(tenant.stderr).toMatch(/^memory: --tenant must be a tenant name/);
    const unmigrated = await memory(['list'], `${ns.mysqlUrl}_bare`);
    try {
      expect(unmigrated.code).toBe(1);
      expect(unmigrated.stderr).toMatch(/has no agent_notes table .*npm run migrate creates it/);
    } finally {
      await pool.query(`DROP DATABASE IF EXISTS \`${ns.database}_bare\``);
    }
  });
});
