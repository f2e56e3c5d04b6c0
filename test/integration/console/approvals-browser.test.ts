// Deciding approvals in a real headless Chromium (Debian's `chromium`, driven by playwright-core), under the
// board's own CSP: an approver opens a run that waits, follows its "decide" link, approves one call and rejects
// another with a reason from the console's plain HTML forms, corrects a refused edit, and sees each decided; a
// viewer sees the same list without a button. The store is a migrated database of its own, the approvals asked
// through the ApprovalStore as a parked worker asks them; the desk wakes the parked job on a queue prefix of its
// own. Writes a screenshot of the pages under reports/console-screenshots/ (or CONSOLE_SCREENSHOTS_DIR).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { createBoardApp } from '../../../producers/board-app.js';
import { approvalIdOf } from '../../../src/approvals/approval.js';
import { ApprovalDesk } from '../../../src/approvals/approval-desk.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { wakeParkedJob } from '../../../src/approvals/wake-parked-job.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { FLEET_QUEUES, TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { REDIS_URL } from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const CHROMIUM = '/usr/bin/chromium';
const ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_approvals_browser_${ID}`;
const PREFIX = `test-approvals-browser-${ID}`;
const VIEWER = { username: 'operator', password: `pw-${ID}-viewer` };
const ALICE = { username: 'alice', password: `alice-${ID}-password` };
const JOB = `parked-${ID}`;
const SHOTS = process.env['CONSOLE_SCREENSHOTS_DIR'] ?? join('reports', 'console-screenshots');
const EMAIL_SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
  required: ['to', 'subject', 'body'],
  additionalProperties: false,
};
const CUSTOMERS = ['ana@example.com', 'ben@example.com', 'cleo@example.com'];

let pool: Pool;
let store: ApprovalStore;
let redis: Redis;
let queues: Queue[];
let server: Server;
let base: string;
let browser: Browser;
const contexts: BrowserContext[] = [];
const requested: string[] = [];
/** The approval of each customer's email, in order. */
const ids: string[] = [];

const tasks = () => queues.find((queue) => queue.name === TASKS_QUEUE)!;

setupOrFail(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the console's browser tests need Debian's chromium (apt-get install -y chromium)`,
    );
  }
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`, { connectionLimit: 4 });
  await migrate(pool);
  store = new ApprovalStore(pool);
  redis = createRedis(REDIS_URL, 'producer');
  queues = FLEET_QUEUES.map((name) => new Queue(name, { connection: redis, prefix: PREFIX }));

  // A run parked on three emails: its job waits delayed, its calls wait in agent_approvals.
  await new RunsRepository(pool).startRun({
    jobId: JOB,
    task: 'Email a thank-you note to the top 3 customers',
    model: 'gpt-4o',
    protocol: 'tools',
    agent: 'default',
    attempt: 1,
  });
  await tasks().add(TASK_JOB_NAME, { task: 'parked' }, { jobId: JOB, delay: 3_600_000 });
  const now = Date.now();
  for (const [i, to] of CUSTOMERS.entries()) {
    const callKey = `${JOB}:2:${i}`;
    await store.request([
      {
        jobId: JOB,
        batchId: null,
        tenant: null,
        agent: 'default',
        step: 2,
        callId: `call_${i}`,
        callKey,
        instance: '1',
        tool: 'send_email',
        arguments: {
          to,
          subject: 'Thank you',
          body: `Dear customer,\n\n<b>thank you</b> for your business.`,
        },
        argumentsSchema: EMAIL_SCHEMA,
        requestedAt: new Date(now + i),
        expiresAt: new Date(now + 3_600_000),
      },
    ]);
    ids.push(approvalIdOf(callKey, '1'));
  }

  const desk = new ApprovalDesk({ store, wake: (jobId) => wakeParkedJob(tasks(), jobId) });
  server = createServer(
    createBoardApp({
      queues,
      user: VIEWER.username,
      password: VIEWER.password,
      approvers: [{ user: ALICE.username, password: ALICE.password }],
      console: new ConsoleStore(pool),
      approvals: desk,
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
  await mkdir(SHOTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  if (server) await new Promise((resolve) => server.close(resolve) && server.closeAllConnections());
  for (const queue of queues ?? []) await queue.close();
  if (redis) {
    await deleteKeysWithPrefix(redis, PREFIX);
    redis.disconnect();
  }
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

/** A page logged in as `login`, under the board's CSP (not bypassed: the forms must work under it). */
async function open(login: { username: string; password: string }, path: string): Promise<Page> {
  const context = await browser.newContext({
    httpCredentials: login,
    viewport: { width: 1280, height: 900 },
  });
  contexts.push(context);
  context.on('request', (request) => requested.push(request.url()));
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    throw new Error(`the page opened a dialog: ${dialog.message()}`);
  });
  const response = await page.goto(`${base}${path}`, { waitUntil: 'networkidle' });
  expect(response?.status(), path).toBe(200);
  return page;
}

const card = (page: Page, id: string) => page.locator(`article.approval[id="${id}"]`);
/** The list the console redirects to after a decision on `id`, filtered as before. */
const decided = (id: string) => (url: URL) =>
  url.pathname === '/console/approvals' &&
  url.searchParams.get('jobId') === JOB &&
  url.searchParams.get('decided') === id;

describe('deciding approvals in a browser', { timeout: 60_000 }, () => {
  it('shows the viewer the waiting calls without a button', async () => {
    const page = await open(VIEWER, `/console/approvals?jobId=${JOB}`);
    expect(await page.locator('article.approval').count()).toBe(3);
    expect(await page.locator('form[method="post"]').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Approve|Reject/ }).count()).toBe(0);
    expect(await page.locator('main').innerText()).toContain('can see approvals but not decide them');
    expect(await page.locator('nav').innerText()).toContain('Approvals 3 pending');
  });

  it('lets an approver follow the run to its approvals, approve one and reject another with a reason', async () => {
    const page = await open(ALICE, `/console/runs/${JOB}`);
    const rows = page.locator('table.approvals tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.first().innerText()).toContain('awaiting approval');
    await rows.first().locator('a', { hasText: 'decide' }).click();
    await page.waitForURL((url) => url.pathname === '/console/approvals' && url.hash === `#${ids[0]}`);
    // The hostile-looking body is text, not markup.
    expect(await card(page, ids[0]!).locator('pre.arguments b').count()).toBe(0);
    expect(await card(page, ids[0]!).locator('pre.arguments').innerText()).toContain('<b>thank you</b>');
    await page.screenshot({ path: join(SHOTS, 'approvals.png'), fullPage: true });

    await card(page, ids[0]!).locator('form.approve input[name="reason"]').fill('checked the list');
    await card(page, ids[0]!).getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(decided(ids[0]!));
    expect(await page.locator('.notice').innerText()).toMatch(
      /send_email on run .*: approved by console:alice\./,
    );
    expect(await card(page, ids[0]!).count()).toBe(0);
    expect(await store.get(ids[0]!)).toMatchObject({
      state: 'approved',
      decidedBy: 'console:alice',
      reason: 'checked the list',
    });

    await card(page, ids[1]!).locator('form.reject input[name="reason"]').fill('not a customer any more');
    await card(page, ids[1]!).getByRole('button', { name: 'Reject' }).click();
    await page.waitForURL(decided(ids[1]!));
    expect(await page.locator('.notice').innerText()).toContain('rejected by console:alice');
    expect(await store.get(ids[1]!)).toMatchObject({ state: 'rejected', reason: 'not a customer any more' });
  });

  it('refuses a bad edit naming the field, keeps the text to correct, then approves the corrected one', async () => {
    const page = await open(ALICE, `/console/approvals?jobId=${JOB}`);
    const form = card(page, ids[2]!).locator('form.approve');
    await form.locator('summary').click();
    const edited = { to: CUSTOMERS[2], subject: 'Thank you!', body: 'Dear Cleo, thank you.' };
    await form.locator('textarea').fill(JSON.stringify({ ...edited, to: 42 }));
    await form.getByRole('button', { name: 'Approve' }).click();
    await page.waitForLoadState('networkidle');
    expect(await page.locator('h1').innerText()).toBe('Decision refused');
    expect(await page.locator('ul.issues').innerText()).toContain('arguments.to');
    await page.screenshot({ path: join(SHOTS, 'approval-refused.png'), fullPage: true });

    const again = card(page, ids[2]!).locator('form.approve');
    expect(await again.locator('textarea').inputValue()).toContain('"to":42');
    await again.locator('textarea').fill(JSON.stringify(edited));
    await again.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(decided(ids[2]!));
    expect(await page.locator('.notice').innerText()).toContain('approved by console:alice');
    expect(await store.get(ids[2]!)).toMatchObject({ state: 'approved', editedArguments: edited });

    // Its last call decided, the parked job was woken; the run's page says what was decided.
    expect(await (await tasks().getJob(JOB))?.getState()).toBe('waiting');
    const run = await open(ALICE, `/console/runs/${JOB}`);
    const decisions = await run.locator('table.approvals tbody').innerText();
    expect(decisions).not.toContain('awaiting approval');
    expect(decisions).toContain('arguments edited');
    expect(await run.locator('nav').innerText()).not.toContain('pending');
    expect(requested.filter((url) => !url.startsWith(`${base}/`))).toEqual([]);
  });
});
