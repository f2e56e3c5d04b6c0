// The run console in a real headless Chromium (Debian's `chromium`, driven by playwright-core), over runs made
// by a real worker: the reference task (a failed query, the corrected one, three emails, the answer), a run whose
// answer is hostile Markdown with a table, and a batch. Logs in, finds the reference run, reads its timeline,
// opens a batch, checks that no request of any page (the console's, Bull Board's) leaves 127.0.0.1, and writes
// a screenshot of each page. Also `npm run trace -- --job ID` on the same run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import type { Pool } from 'mysql2/promise';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { createBoardApp } from '../../../producers/board-app.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { REFERENCE_TASK, REPORT_TASKS, referenceModelRules } from '../../../src/demo/reference-model.js';
import { expectedTopCustomers, generateSalesData } from '../../../src/demo/sales-data.js';
import { seedDemoDatabase } from '../../../src/demo/seed-demo-database.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { FLEET_QUEUES } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { createStorePool } from '../../../src/store/pool.js';
import {
  startScriptedModel,
  type ReplyRule,
  type ScriptedModelServer,
} from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_INSTALL = 'apt-get install -y chromium';
const ADMIN = 'mysql://root@127.0.0.1:3306';
const suffix = Math.random().toString(16).slice(2, 8);
const DATA_DB = `af_test_console_${suffix}`;
const READER = `af_rc_${suffix}`;
const EMPTY_DB = `af_test_console_empty_${suffix}`;
const USER = 'operator';
const PASSWORD = `pw-${suffix}-console-test`;
/** Where the screenshots go: under reports/ (ignored by git) unless told otherwise (docs/console for the README). */
const SHOTS = process.env['CONSOLE_SCREENSHOTS_DIR'] ?? join('reports', 'console-screenshots');
const top3 = expectedTopCustomers(generateSalesData(), 3);

const HOSTILE_TASK = 'Console check: summarise the regions as a table';
const HOSTILE_ANSWER = [
  '## Regions',
  '',
  '| region | revenue |',
  '| --- | ---: |',
  '| North <b>bold</b> | 1,200 |',
  '| South | 900 |',
  '',
  '<script>window.__owned = 1; alert(1)</script>',
  '<img src="https://evil.example.net/pixel.png" onerror="window.__owned = 2">',
  '',
  '[a link](https://evil.example.net/phish) and ![pic](https://evil.example.net/p.png) and <https://evil.example.net/auto>',
  'The token sk-abcdefghijklmnopqrstuvwx must not show.',
].join('\n');
const hostileRule: ReplyRule = (request) =>
  request.messages[1]?.content === HOSTILE_TASK
    ? { answer: HOSTILE_ANSWER, cachedTokens: 128, reasoningTokens: 24 }
    : undefined;
/** A task that keeps querying: with a 2-step budget the loop makes its last turn without tools. */
const CAPPED_TASK = 'Console check: count the customers again and again';
const cappedRule: ReplyRule = (request) => {
  if (request.messages[1]?.content !== CAPPED_TASK) return undefined;
  if (request.tools === undefined) return { answer: 'About 200 customers (stopped at the step cap).' };
  return { actions: [{ tool: 'sql_query', args: { sql: 'SELECT COUNT(*) AS n FROM customers' } }] };
};

let model: ScriptedModelServer;
let ns: FleetNamespace;
let sink: SmtpSink;
let worker: WorkerHandle;
let redis: Redis;
let queues: Queue[];
let pool: Pool;
let server: Server;
let base: string;
let userDataDir: string;
let context: BrowserContext;
/** Every URL the browser asked for, from any page of the test. */
const requested: string[] = [];
const jobs = {
  reference: '',
  hostile: '',
  capped: '',
  batch: '',
  batchJobs: [] as string[],
  broke: '',
  brokeJob: '',
};

setupOrFail(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the console's browser tests need Debian's chromium (${CHROMIUM_INSTALL})`,
    );
  }
  await seedDemoDatabase({
    adminUrl: ADMIN,
    database: DATA_DB,
    readerUser: READER,
    readerPassword: 'reader-pw',
  });
  ns = createNamespace('console');
  sink = await startSmtpSink({});
  model = await startScriptedModel({ rules: [hostileRule, cappedRule, ...referenceModelRules] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    DATA_MYSQL_URL: `mysql://${READER}:reader-pw@127.0.0.1:3306/${DATA_DB}`,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    METRICS_PORT: '0',
  });
  await worker.waitForOutput(/worker started/, 60_000);

  jobs.reference = (await ns.client.enqueue({ task: REFERENCE_TASK })).jobId;
  jobs.hostile = (await ns.client.enqueue({ task: HOSTILE_TASK })).jobId;
  jobs.capped = (await ns.client.enqueue({ task: CAPPED_TASK, budget: { maxSteps: 2 } })).jobId;
  const batch = await ns.client.enqueueBatch({
    tasks: REPORT_TASKS.slice(0, 2).map(({ task }) => ({ task })),
  });
  jobs.batch = batch.batchId;
  jobs.batchJobs = batch.jobIds;
  // A batch whose budget cannot pay for its task's first call: stopped before any step, saying why.
  const broke = await ns.client.enqueueBatch({
    tasks: [{ task: REPORT_TASKS[2]!.task }],
    budget: { maxCostUsd: 0.0005 },
  });
  jobs.broke = broke.batchId;
  jobs.brokeJob = broke.jobIds[0]!;
  const reference = await ns.client.waitForResult(jobs.reference, { timeoutMs: 60_000 });
  expect(reference.status).toBe('succeeded');
  await ns.client.waitForResult(jobs.hostile, { timeoutMs: 60_000 });
  await ns.client.waitForResult(jobs.capped, { timeoutMs: 60_000 });
  await ns.client.waitForBatch(jobs.batch, { timeoutMs: 60_000 });
  await ns.client.waitForBatch(jobs.broke, { timeoutMs: 60_000 });

  redis = createRedis(REDIS_URL, 'producer');
  queues = FLEET_QUEUES.map((name) => new Queue(name, { connection: redis, prefix: ns.prefix }));
  pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 2 });
  server = createServer(
    createBoardApp({ queues, user: USER, password: PASSWORD, console: new ConsoleStore(pool) }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  userDataDir = await mkdtemp(join(tmpdir(), 'af-console-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    httpCredentials: { username: USER, password: PASSWORD },
    // The pages' own requests are what is tested, not the CSP that would block some of them.
    bypassCSP: true,
    viewport: { width: 1280, height: 900 },
  });
  context.on('request', (request) => requested.push(request.url()));
  await mkdir(SHOTS, { recursive: true });
}, 240_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  if (server) await new Promise((resolve) => server.close(resolve) && server.closeAllConnections());
  await pool?.end().catch(() => undefined);
  for (const queue of queues ?? []) await queue.close();
  redis?.disconnect();
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
  const admin = await mysql.createConnection(ADMIN);
  await admin.query(`DROP DATABASE IF EXISTS \`${DATA_DB}\``);
  await admin.query(`DROP DATABASE IF EXISTS \`${EMPTY_DB}\``);
  await admin.query(`DROP USER IF EXISTS '${READER}'@'%'`);
  await admin.end();
});

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    throw new Error(`the page opened a dialog: ${dialog.message()}`);
  });
  const response = await page.goto(`${base}${path}`, { waitUntil: 'networkidle' });
  expect(response?.status(), path).toBe(200);
  return page;
}

const shot = (page: Page, name: string, fullPage = true) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });

describe('the run console in a browser', () => {
  it('refuses a visit without the login', async () => {
    for (const path of [
      '/console/runs',
      `/console/runs/${jobs.reference}`,
      `/console/batches/${jobs.batch}`,
    ]) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(401);
    }
    const post = await fetch(`${base}/console/runs`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` },
    });
    expect(post.status).toBe(405);
  });

  it('lists the runs, finds the reference run and shows its timeline: the failed SQL, its error, three emails, the answer', async () => {
    const list = await open('/console/runs?agent=default&status=succeeded');
    const row = list.locator('table.runs tbody tr', { hasText: REFERENCE_TASK });
    await expect.poll(() => row.count()).toBe(1);
    await shot(list, 'runs');
    await row.locator('td:nth-child(3) a').click();
    await list.waitForURL(`**/console/runs/${jobs.reference}`);
    await list.waitForLoadState('networkidle');

    const tools = list.locator('ol.timeline li.tool');
    const failed = list.locator('ol.timeline li.tool.failed[data-tool="sql_query"]');
    await expect.poll(() => failed.count()).toBe(1);
    expect(await failed.locator('pre.sql').innerText()).toContain('SUM(o.amount)');
    expect(await failed.locator('pre.observation').innerText()).toMatch(/Unknown column/);
    const corrected = list.locator('ol.timeline li.tool.ok[data-tool="sql_query"] pre.sql');
    expect(await corrected.innerText()).toContain('SUM(o.total)');

    const emails = list.locator('ol.timeline li.tool[data-tool="send_email"]');
    expect(await emails.count()).toBe(3);
    expect((await emails.locator('dd.to').allInnerTexts()).sort()).toEqual(top3.map((c) => c.email).sort());
    expect(await emails.locator('dd.subject').allInnerTexts()).toEqual(
      Array(3).fill('Thank you for your business'),
    );
    for (const customer of top3) {
      expect(await emails.locator('pre.body', { hasText: customer.name }).count()).toBe(1);
    }
    expect(await tools.count()).toBe(5);
    expect(await list.locator('ol.timeline li.model').count()).toBe(4);

    const answer = await list.locator('.markdown.answer').innerText();
    for (const customer of top3) expect(answer).toContain(customer.name);
    await shot(list, 'run-reference');
  });

  it('renders a hostile Markdown answer: its table as a table, its HTML as text, no link, no image, no script', async () => {
    const page = await open(`/console/runs/${jobs.hostile}`);
    const answer = page.locator('.markdown.answer');
    expect(await answer.locator('table tbody tr').count()).toBe(2);
    expect(await answer.locator('table th').allInnerTexts()).toEqual(['region', 'revenue']);
    expect(await answer.locator('script, img, a, b, iframe, [onerror]').count()).toBe(0);
    const text = await answer.innerText();
    expect(text).toContain('<script>');
    expect(await answer.locator('span.link', { hasText: '(https://evil.example.net/phish)' }).count()).toBe(
      1,
    );
    expect(await answer.locator('span.image').innerText()).toBe('[image: pic]');
    expect(text).not.toContain('sk-abcdefghijklmnopqrstuvwx');
    expect(await page.evaluate(() => (globalThis as { __owned?: number }).__owned)).toBeUndefined();
    // Cached and reasoning tokens, reported by the endpoint, are shown when there are some.
    expect(await page.locator('.card', { hasText: 'Cached prompt tokens' }).innerText()).toContain('128');
    expect(await page.locator('.card', { hasText: 'Reasoning tokens' }).innerText()).toContain('24');
    expect(await page.locator('ol.timeline li.model').innerText()).toMatch(
      /prompt \(128 cached\) \+ \d+ completion \(24 reasoning\) tokens/,
    );
    const reference = await open(`/console/runs/${jobs.reference}`);
    expect(await reference.locator('.card', { hasText: 'Cached prompt tokens' }).count()).toBe(0);
    await shot(page, 'run-hostile-answer');
  });

  it("shows the loop's budget decision: a final turn without tools at the step cap", async () => {
    const page = await open(`/console/runs/${jobs.capped}`);
    const decisions = await page.locator('ol.timeline li.decision').allInnerTexts();
    expect(decisions.join('\n')).toContain('final turn: the step cap is reached');
    expect(decisions.join('\n')).toContain('stopped (max_steps)');
    expect(await page.locator('ol.timeline li.model', { hasText: 'final' }).count()).toBe(1);
    expect(await page.locator('.markdown.answer').innerText()).toContain('About 200 customers');
    await shot(page, 'run-step-cap');
  });

  it('says why a batch budget stopped a run before any step, on the run and on the batch', async () => {
    const page = await open(`/console/runs/${jobs.brokeJob}`);
    expect(await page.locator('h1').innerText()).toContain('cost_budget');
    const why = await page.locator('.stop-detail').innerText();
    expect(why).toMatch(/^Why it stopped \(cost_budget\): .*\$/);
    expect(await page.locator('ol.timeline li.decision').innerText()).toContain('no further call was made');
    await shot(page, 'run-batch-budget');
    const batch = await open(`/console/batches/${jobs.broke}`);
    const detail = why.replace(/^Why it stopped \(cost_budget\): /, '');
    expect(await batch.locator('table.runs .why').innerText()).toBe(
      detail.length <= 300 ? detail : `${detail.slice(0, 299)}…`,
    );
  });

  it('shows a batch with the report chart and a link per task to its run', async () => {
    const page = await open(`/console/batches/${jobs.batch}`);
    expect(await page.locator('figure.chart svg').count()).toBe(1);
    const links = page.locator('table.runs tbody tr td:nth-child(2) a');
    expect(await links.count()).toBe(2);
    expect(await links.evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual(
      jobs.batchJobs.map((id) => `/console/runs/${encodeURIComponent(id)}`),
    );
    await shot(page, 'batch');
    await links.first().click();
    await page.waitForURL(`**/console/runs/${encodeURIComponent(jobs.batchJobs[0]!)}`);
    expect(await page.locator('h1').innerText()).toContain(jobs.batchJobs[0]!);
  });

  it('filters the list by batch and refuses a bad filter naming the field', async () => {
    const page = await open(`/console/runs?batch=${encodeURIComponent(jobs.batch)}`);
    expect(await page.locator('table.runs tbody tr').count()).toBe(2);
    const bad = await fetch(`${base}/console/runs?from=yesterday`, {
      headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` },
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('from: must be a date, YYYY-MM-DD (UTC)');
  });

  it("Bull Board's page links each task job to its run, names jobs apart, and asks nothing of the internet", async () => {
    const page = await open(`/queue/agent-tasks?status=completed`);
    const link = page.locator(`a[href="/console/runs/${jobs.reference}"]`);
    await expect.poll(() => link.count(), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await page.content()).toContain('default: Find the top 3 customers by Q1 2024');
    // A batch's tasks are named the same way.
    const tasks = queues.find((queue) => queue.name === 'agent-tasks')!;
    expect((await tasks.getJob(jobs.batchJobs[0]!))?.name).toBe(
      'default: Report the number of completed orders and the…',
    );
    await shot(page, 'bull-board-tasks', false);
    // Every request of every page of this file, Bull Board's fonts included, went to the board on 127.0.0.1.
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((url) => !url.startsWith(`${base}/`))).toEqual([]);
  });
});

function run(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run trace', () => {
  it('prints the same timeline in the terminal: the failed SQL and its error, the three emails, the answer', async () => {
    const { code, stdout, stderr } = await run(
      'npm',
      ['run', '--silent', 'trace', '--', '--job', jobs.reference],
      {
        MYSQL_URL: ns.mysqlUrl,
      },
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toContain(`run ${jobs.reference} · agent default · succeeded (answer)`);
    expect(stdout).toMatch(/tool sql_query #1 · failed: \w+/);
    expect(stdout).toContain('SUM(o.amount)');
    expect(stdout).toMatch(/Unknown column/);
    for (const customer of top3) expect(stdout).toContain(`to: ${customer.email}`);
    expect(stdout.match(/tool send_email #\d · ok/g)).toHaveLength(3);
    expect(stdout.match(/ model \((action|answer)\) · /g)).toHaveLength(4);
    expect(stdout).toMatch(/answer:\n {2}Top 3 customers by Q1 2024 sales/);
  }, 60_000);

  it('says so when there is no such run, and names the missing argument', async () => {
    const missing = await run('npm', ['run', '--silent', 'trace', '--', '--job', 'no-such-job'], {
      MYSQL_URL: ns.mysqlUrl,
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('trace: no run "no-such-job" in agent_runs');
    const empty = await run('npm', ['run', '--silent', 'trace', '--', '--job', '1'], {
      MYSQL_URL: `${ADMIN}/${EMPTY_DB}`,
    });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain(`trace: ${EMPTY_DB} has no agent_runs table`);
    const bad = await run('npm', ['run', '--silent', 'trace'], { MYSQL_URL: ns.mysqlUrl });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--job ID is required');
  }, 60_000);
});
