// The run console's approvals over HTTP, against the real MariaDB and Redis: a migrated database of its own with
// approvals asked through the ApprovalStore (as a parked worker asks them), the board app with a viewer, an
// admin and an approver login, and the approval desk waking parked jobs on a queue prefix of its own. What is
// checked: who may see and who may decide, what a decision records (`console:<login>`), the edit and its
// refusals, the first decision standing, the cross-site guard, and that model output is shown escaped.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { createBoardApp } from '../../../producers/board-app.js';
import { approvalIdOf } from '../../../src/approvals/approval.js';
import { ApprovalDesk } from '../../../src/approvals/approval-desk.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { wakeParkedJob } from '../../../src/approvals/wake-parked-job.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { FLEET_QUEUES, TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { REDIS_URL } from '../../support/fleet-harness.js';
import { startHttpProcess } from '../../support/http-process.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_approvals_console_${ID}`;
const PREFIX = `test-approvals-console-${ID}`;
const VIEWER = { user: 'operator', password: `pw-${ID}-viewer` };
const ADMIN = { user: 'root-operator', password: `admin-${ID}-password` };
const ALICE = { user: 'alice', password: `alice-${ID}-password` };

const EMAIL_SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
  required: ['to', 'subject', 'body'],
  additionalProperties: false,
};
const HOSTILE = '</pre><script>window.__owned = 1</script><img src=x onerror=alert(1)>';

let pool: Pool;
let store: ApprovalStore;
let desk: ApprovalDesk;
let redis: Redis;
let queues: Queue[];
let server: Server;
let base: string;
let calls = 0;

type Login = { user: string; password: string };
const basic = ({ user, password }: Login) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const tasks = () => queues.find((queue) => queue.name === TASKS_QUEUE)!;
const sameOrigin = () => ({ origin: base, 'sec-fetch-site': 'same-origin' });

/** A run that asks for approval of one call, as a parked worker would record it; answers the approval's id. */
async function ask(
  jobId: string,
  tool: string,
  args: Record<string, unknown>,
  options: { schema?: Record<string, unknown> | null; expiresInMs?: number; batchId?: string } = {},
): Promise<string> {
  const callKey = `${jobId}:1:${calls++}`;
  const now = Date.now();
  await store.request([
    {
      jobId,
      batchId: options.batchId ?? null,
      tenant: null,
      agent: 'default',
      step: 1,
      callId: `call_${calls}`,
      callKey,
      instance: '1',
      tool,
      arguments: args,
      argumentsSchema: options.schema === undefined ? EMAIL_SCHEMA : options.schema,
      requestedAt: new Date(now),
      expiresAt: new Date(now + (options.expiresInMs ?? 3_600_000)),
    },
  ]);
  return approvalIdOf(callKey, '1');
}

const email = (to: string) => ({ to, subject: 'Thank you', body: 'Dear customer, thank you.' });

function get(path: string, login: Login = VIEWER): Promise<Response> {
  return fetch(`${base}${path}`, { headers: basic(login) });
}

function post(
  id: string,
  login: Login,
  fields: Record<string, string>,
  headers: Record<string, string> = sameOrigin(),
): Promise<Response> {
  return fetch(`${base}/console/approvals/${encodeURIComponent(id)}`, {
    method: 'POST',
    headers: { ...basic(login), ...headers },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`, { connectionLimit: 4 });
  await migrate(pool);
  store = new ApprovalStore(pool);
  redis = createRedis(REDIS_URL, 'producer');
  queues = FLEET_QUEUES.map((name) => new Queue(name, { connection: redis, prefix: PREFIX }));
  desk = new ApprovalDesk({ store, wake: (jobId) => wakeParkedJob(tasks(), jobId) });
  const app = createBoardApp({
    queues,
    ...VIEWER,
    admin: ADMIN,
    approvers: [ALICE],
    console: new ConsoleStore(pool),
    approvals: desk,
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
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

describe('who sees and who decides', () => {
  it('shows the viewer the pending approvals without a form, and refuses its POST with 403', async () => {
    const jobId = `viewer-${ID}`;
    const id = await ask(jobId, 'send_email', email('ann@example.com'));
    const response = await get(`/console/approvals?jobId=${jobId}`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain(`id="${id}"`);
    expect(html).toContain('ann@example.com');
    expect(html).toContain('awaiting approval');
    expect(html).not.toMatch(/<form[^>]*method="post"/);
    expect(html).toContain('can see approvals but not decide them');

    const refused = await post(id, VIEWER, { decision: 'approve' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/operator can see approvals but not decide them.*BOARD_APPROVERS/);
    expect((await store.get(id))?.state).toBe('pending');
  });

  it('keeps every other state-changing request read-only, for an approver too', async () => {
    for (const login of [VIEWER, ALICE]) {
      const response = await fetch(`${base}/console/runs`, {
        method: 'POST',
        headers: { ...basic(login), ...sameOrigin() },
      });
      expect(response.status).toBe(405);
      const board = await fetch(`${base}/api/queues/${TASKS_QUEUE}/pause`, {
        method: 'PUT',
        headers: { ...basic(login), ...sameOrigin() },
      });
      expect(board.status).toBe(405);
    }
    expect(await tasks().isPaused()).toBe(false);
  });

  it('offers an approver the Approve and Reject forms, naming how its decision is recorded', async () => {
    const jobId = `forms-${ID}`;
    const id = await ask(jobId, 'send_email', email('bo@example.com'));
    const html = await (await get(`/console/approvals?jobId=${jobId}`, ALICE)).text();
    expect(html).toContain(`<form method="post" action="/console/approvals/${id}" class="approve">`);
    expect(html).toContain(`<form method="post" action="/console/approvals/${id}" class="reject">`);
    expect(html).toContain('recorded as console:alice');
    expect(html).toContain(`name="back" value="jobId=${jobId}"`);
  });
});

describe('deciding', () => {
  it('approves: 303 back to the list, recorded as console:<approver>, the parked job woken', async () => {
    const jobId = `approve-${ID}`;
    await tasks().add(TASK_JOB_NAME, { task: 'parked' }, { jobId, delay: 3_600_000 });
    const id = await ask(jobId, 'send_email', email('cy@example.com'));
    const response = await post(id, ALICE, { decision: 'approve', back: `jobId=${jobId}` });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`/console/approvals?jobId=${jobId}&decided=${id}`);
    expect(await store.get(id)).toMatchObject({
      state: 'approved',
      decision: 'approve',
      decidedBy: 'console:alice',
      reason: null,
      editedArguments: null,
    });
    expect(await (await tasks().getJob(jobId))?.getState()).toBe('waiting');

    const back = await (await get(response.headers.get('location')!, ALICE)).text();
    expect(back).toMatch(/<p class="notice"[^>]*>Approval .*approved by console:alice\.<\/p>/);
  });

  it('rejects with a reason; the admin login may decide too', async () => {
    const jobId = `reject-${ID}`;
    const first = await ask(jobId, 'send_email', email('di@example.com'));
    const second = await ask(jobId, 'send_email', email('ed@example.com'));
    const rejected = await post(first, ALICE, { decision: 'reject', reason: '  not this customer  ' });
    expect(rejected.status).toBe(303);
    expect(await store.get(first)).toMatchObject({
      state: 'rejected',
      decidedBy: 'console:alice',
      reason: 'not this customer',
    });
    const byAdmin = await post(second, ADMIN, { decision: 'approve', reason: 'checked' });
    expect(byAdmin.status).toBe(303);
    expect(await store.get(second)).toMatchObject({ state: 'approved', decidedBy: 'console:root-operator' });

    const page = await (await get(`/console/approvals?jobId=${jobId}&state=all`)).text();
    expect(page).toContain('rejected by <strong class="by">console:alice</strong>');
    expect(page).toContain('<span class="reason">not this customer</span>');
  });

  it('takes the textarea sent back unchanged as no edit, and records a real edit', async () => {
    const jobId = `edit-${ID}`;
    const unchanged = await ask(jobId, 'send_email', email('fi@example.com'));
    const edited = await ask(jobId, 'send_email', email('gu@example.com'));
    const shown = JSON.stringify(email('fi@example.com'), null, 2);
    expect((await post(unchanged, ALICE, { decision: 'approve', arguments: shown })).status).toBe(303);
    expect(await store.get(unchanged)).toMatchObject({ state: 'approved', editedArguments: null });

    const edit = { ...email('gu@example.com'), subject: 'Thanks again' };
    const response = await post(edited, ALICE, { decision: 'approve', arguments: JSON.stringify(edit) });
    expect(response.status).toBe(303);
    expect(await store.get(edited)).toMatchObject({ state: 'approved', editedArguments: edit });
    const page = await (await get(`/console/approvals?jobId=${jobId}&state=all`)).text();
    expect(page).toContain('Approved with the arguments changed to');
  });

  it('refuses a bad edit with 400 naming the field, decides nothing, and shows the form again with the text', async () => {
    const jobId = `bad-edit-${ID}`;
    const id = await ask(jobId, 'send_email', email('ho@example.com'));
    const cases: [string, RegExp][] = [
      [JSON.stringify({ ...email('ho@example.com'), to: 42 }), /<code class="path">arguments\.to<\/code>/],
      ['{"to": "ho@example.com",', /<code class="path">arguments<\/code>: must be JSON/],
      ['["not", "an", "object"]', /<code class="path">arguments<\/code>: must be a JSON object/],
      [
        JSON.stringify({ ...email('ho@example.com'), bcc: 'x@example.com' }),
        /<code class="path">arguments\.bcc<\/code>: unknown field/,
      ],
    ];
    for (const [text, named] of cases) {
      const response = await post(id, ALICE, { decision: 'approve', arguments: text });
      expect(response.status, text).toBe(400);
      const html = await response.text();
      expect(html, text).toContain('Decision refused');
      expect(html, text).toMatch(named);
      expect(html, text).toContain('<details open>');
    }
    const withText = await post(id, ALICE, { decision: 'approve', arguments: '{"to": 42 <b>' });
    expect(await withText.text()).toContain('{&quot;to&quot;: 42 &lt;b&gt;</textarea>');
    const rejectWithEdit = await post(id, ALICE, { decision: 'reject', arguments: '{"to": "x"}' });
    expect(rejectWithEdit.status).toBe(400);
    expect(await rejectWithEdit.text()).toContain('only an approval takes edited arguments');
    const noDecision = await post(id, ALICE, { decision: 'maybe' });
    expect(noDecision.status).toBe(400);
    expect(await noDecision.text()).toMatch(/<code class="path">decision<\/code>: must be approve or reject/);
    expect((await store.get(id))?.state).toBe('pending');
  });

  it('does not let an edit keep a value the console hides', async () => {
    const jobId = `masked-${ID}`;
    const args = { url: 'https://hooks.example.com/x', apiKey: 'sk-live-0123456789abcdefghij', note: 'hi' };
    const id = await ask(jobId, 'call_webhook', args, { schema: null });
    const html = await (await get(`/console/approvals?jobId=${jobId}`, ALICE)).text();
    expect(html).not.toContain('sk-live-0123456789abcdefghij');
    expect(html).toContain('[redacted]');
    const shown = { ...args, apiKey: '[redacted]' };
    const refused = await post(id, ALICE, {
      decision: 'approve',
      arguments: JSON.stringify({ ...shown, note: 'changed' }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/<code class="path">arguments\.apiKey<\/code>: still holds a value/);
    // Sent back as shown, it is no edit: the call runs with its real key.
    expect((await post(id, ALICE, { decision: 'approve', arguments: JSON.stringify(shown) })).status).toBe(
      303,
    );
    expect(await store.get(id)).toMatchObject({ state: 'approved', editedArguments: null, arguments: args });
  });

  it('answers 409 with the first decision when the approval was decided before, or expired', async () => {
    const jobId = `conflict-${ID}`;
    const id = await ask(jobId, 'send_email', email('ik@example.com'));
    expect((await desk.decide(id, { decision: 'reject', reason: 'too late', by: 'ops-token' })).kind).toBe(
      'decided',
    );
    const response = await post(id, ALICE, { decision: 'approve' });
    expect(response.status).toBe(409);
    const html = await response.text();
    expect(html).toContain('Already decided');
    expect(html).toContain('the first decision stands');
    expect(html).toContain('rejected by <strong class="by">ops-token</strong>');
    expect(html).toContain('too late');
    expect(await store.get(id)).toMatchObject({ state: 'rejected', decidedBy: 'ops-token' });

    const expired = await ask(jobId, 'send_email', email('jo@example.com'), { expiresInMs: -1_000 });
    const late = await post(expired, ALICE, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(await late.text()).toContain('was expired before');
    expect((await store.get(expired))?.state).toBe('expired');
  });

  it('answers 404 for an approval that does not exist', async () => {
    expect((await post('apr_nope', ALICE, { decision: 'approve' })).status).toBe(404);
    expect((await post('x'.repeat(300), ALICE, { decision: 'approve' })).status).toBe(404);
  });
});

describe('cross-site requests', () => {
  it('refuses a decision posted from another site, or by a form that does not say where it comes from', async () => {
    const id = await ask(`csrf-${ID}`, 'send_email', email('ka@example.com'));
    const refusals: Record<string, string>[] = [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'null' },
      // A form body with neither header: a forgery cannot be told apart from it.
      {},
    ];
    for (const headers of refusals) {
      const response = await post(id, ALICE, { decision: 'approve' }, headers);
      expect(response.status, JSON.stringify(headers)).toBe(403);
    }
    const text = await fetch(`${base}/console/approvals/${id}`, {
      method: 'POST',
      headers: { ...basic(ALICE), ...sameOrigin(), 'content-type': 'text/plain' },
      body: 'decision=approve',
    });
    expect(text.status).toBe(415);
    expect((await store.get(id))?.state).toBe('pending');
    // The board's own page: its origin (or Sec-Fetch-Site alone, as a browser sends it).
    const own = await post(id, ALICE, { decision: 'approve' }, { 'sec-fetch-site': 'same-origin' });
    expect(own.status).toBe(303);
  });
});

describe('pages', () => {
  it('escapes hostile arguments and bounds long ones', async () => {
    const jobId = `hostile-${ID}`;
    const id = await ask(
      jobId,
      'send_email',
      { ...email('lu@example.com'), body: HOSTILE },
      { schema: null },
    );
    const long = await ask(jobId, 'send_email', { ...email('ma@example.com'), body: 'y'.repeat(30_000) });
    const html = await (await get(`/console/approvals?jobId=${jobId}`, ALICE)).text();
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;/pre&gt;&lt;script&gt;');
    const longCard = html.slice(html.indexOf(`id="${long}"`));
    expect(longCard).toMatch(/cut: 30,\d{3} characters in all/);
    expect(longCard).toContain('too long to edit here');
    expect(html.length).toBeLessThan(60_000);
    expect(html).toContain(`id="${id}"`);
  });

  it('filters by state, run, batch and tool, and refuses a bad filter naming the field', async () => {
    const batchId = `batch-${ID}`;
    const id = await ask(`filtered-${ID}`, 'sql_write', { sql: 'DELETE FROM x' }, { schema: null, batchId });
    const byBatch = await (await get(`/console/approvals?batchId=${batchId}`)).text();
    expect(byBatch).toContain(`id="${id}"`);
    expect(byBatch).toContain('1 approval pending');
    const byTool = await (await get(`/console/approvals?tool=sql_write&state=all`)).text();
    expect(byTool).toContain(`id="${id}"`);
    expect(await (await get(`/console/approvals?batchId=${batchId}&state=approved`)).text()).toContain(
      'no approval matches',
    );
    const bad = await get('/console/approvals?state=maybe');
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('state: must be one of pending, approved, rejected, expired, all');
  });

  it("shows a run's approvals on its page, a pending one awaiting approval with a link to decide it", async () => {
    const jobId = `run-${ID}`;
    await new RunsRepository(pool).startRun({
      jobId,
      task: 'Email the top customers',
      model: 'gpt-4o',
      protocol: 'tools',
      attempt: 1,
    });
    const decided = await ask(jobId, 'send_email', email('na@example.com'));
    const pending = await ask(jobId, 'send_email', email('ol@example.com'));
    await desk.decide(decided, { decision: 'reject', reason: 'wrong customer', by: 'console:alice' });
    const html = await (await get(`/console/runs/${jobId}`)).text();
    expect(html).toContain('<h2>Approvals</h2>');
    const pendingRow = html.slice(html.indexOf(`data-approval="${pending}"`)).split('</tr>')[0]!;
    expect(pendingRow).toContain('awaiting approval');
    expect(pendingRow).toContain(`href="/console/approvals?jobId=${jobId}#${pending}"`);
    const decidedRow = html.slice(html.indexOf(`data-approval="${decided}"`)).split('</tr>')[0]!;
    expect(decidedRow).toContain('by console:alice');
    expect(decidedRow).toContain('wrong customer');
  });

  it('links every page to the approvals with the count pending', async () => {
    const pending = (await desk.list({ state: 'pending', limit: 1_000 })).length;
    expect(pending).toBeGreaterThan(0);
    for (const path of ['/console/runs', '/console/approvals']) {
      const html = await (await get(path)).text();
      expect(html, path).toContain(
        `<a href="/console/approvals">Approvals <span class="count">${pending} pending</span></a>`,
      );
    }
  });
});

describe('failures', () => {
  it('answers 413 to a form too large, deciding nothing', async () => {
    const id = await ask(`large-${ID}`, 'send_email', email('qu@example.com'));
    const response = await post(id, ALICE, { decision: 'approve', arguments: 'x'.repeat(300_000) });
    expect(response.status).toBe(413);
    expect((await store.get(id))?.state).toBe('pending');
  });

  it('answers 503 naming the failure, credentials hidden, when the desk cannot read the store', async () => {
    const down = async () => {
      throw new Error('connect ECONNREFUSED mysql://fleet:s3cret-pw@db.internal:3306/fleet');
    };
    const broken = createServer(
      createBoardApp({
        queues,
        ...VIEWER,
        approvers: [ALICE],
        console: new ConsoleStore(pool),
        approvals: { list: down, get: down, decide: down },
      }),
    );
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
      const list = await fetch(`${url}/console/approvals`, { headers: basic(ALICE) });
      expect(list.status).toBe(503);
      const decide = await fetch(`${url}/console/approvals/apr_x`, {
        method: 'POST',
        headers: { ...basic(ALICE), origin: url },
        body: new URLSearchParams({ decision: 'approve' }),
      });
      expect(decide.status).toBe(503);
      for (const html of [await list.text(), await decide.text()]) {
        expect(html).toContain('ECONNREFUSED');
        expect(html).not.toContain('s3cret-pw');
      }
    } finally {
      await new Promise((resolve) => broken.close(resolve) && broken.closeAllConnections());
    }
  });
});

describe('npm run board', () => {
  const env = () => ({
    BOARD_USER: VIEWER.user,
    BOARD_PASSWORD: VIEWER.password,
    BOARD_APPROVERS: `${ALICE.user}:${ALICE.password},bob:bob-${ID}-password`,
    BOARD_PORT: '0',
    REDIS_URL,
    QUEUE_PREFIX: PREFIX,
    MYSQL_URL: `mysql://root@127.0.0.1:3306/${DATABASE}`,
  });

  it("takes the approvers' logins from BOARD_APPROVERS and decides through the store's desk", async () => {
    const board = await startHttpProcess('producers/board.ts', env(), /board listening/);
    try {
      const url = `http://127.0.0.1:${board.listening.port}`;
      const id = await ask(`process-${ID}`, 'send_email', email('pe@example.com'));
      const list = await fetch(`${url}/console/approvals`, {
        headers: basic({ user: 'bob', password: `bob-${ID}-password` }),
      });
      expect(list.status).toBe(200);
      expect(await list.text()).toContain(
        `<form method="post" action="/console/approvals/${id}" class="approve">`,
      );
      const decided = await fetch(`${url}/console/approvals/${id}`, {
        method: 'POST',
        headers: { ...basic({ user: 'bob', password: `bob-${ID}-password` }), origin: url },
        body: new URLSearchParams({ decision: 'reject', reason: 'from the process' }),
        redirect: 'manual',
      });
      expect(decided.status).toBe(303);
      expect(await store.get(id)).toMatchObject({ state: 'rejected', decidedBy: 'console:bob' });
    } finally {
      expect(await board.stop()).toBe(0);
    }
  }, 60_000);

  it("refuses to start when an approver has another login's name, or a short password, hiding them", async () => {
    /** What the process said before it exited, its JSON log line's quotes read back. */
    const refusal = async (approvers: string): Promise<string> => {
      const started = startHttpProcess(
        'producers/board.ts',
        { ...env(), BOARD_APPROVERS: approvers },
        /board listening/,
      );
      const error = await started.then(
        async (board) => {
          await board.stop();
          throw new Error(`the board started with BOARD_APPROVERS=${approvers}`);
        },
        (failure: Error) => failure,
      );
      return error.message.replaceAll('\\"', '"');
    };
    const clash = await refusal(`${VIEWER.user}:clash-${ID}-password`);
    expect(clash).toContain(`BOARD_APPROVERS=(hidden) is invalid: "operator" is BOARD_USER's name`);
    expect(clash).not.toContain(`clash-${ID}-password`);
    const short = await refusal('alice:short-pw');
    expect(short).toContain(
      'BOARD_APPROVERS=(hidden) is invalid: the password of "alice" must be at least 12',
    );
    expect(short).not.toContain('short-pw');
  }, 60_000);
});
