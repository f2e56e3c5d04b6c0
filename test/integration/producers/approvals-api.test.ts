// The approvals routes of the HTTP API against a real MariaDB store (migrated) and Redis, with jobs parked as a
// worker parks them (delayed, progress `awaiting_approval`) but no worker: named tokens and who decided, 401/404/
// 409/400, list filters, a batch-wide decision, a parked job woken by its last decision, and the task state
// `awaiting_approval` on GET /v1/tasks/:id.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Express } from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../../producers/http-api.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';
import { parkJob } from '../../support/parked-jobs.js';

const OPS = `ops-${randomBytes(16).toString('hex')}`;
const BILLING = `billing-${randomBytes(16).toString('hex')}`;
const TOKENS = [
  { name: 'ops', token: OPS },
  { name: 'billing', token: BILLING },
];

const logLines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(chunk.toString('utf8'));
      callback();
    },
  }),
);

let ns: FleetNamespace;
let approvals: ApprovalsHarness;
let base = '';
let noDesk = '';
const servers: Server[] = [];

async function listen(app: Express): Promise<string> {
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const as = (token: string | null): Record<string, string> =>
  token === null ? {} : { authorization: `Bearer ${token}` };
const get = (path: string, token: string | null = OPS, url = base) =>
  fetch(`${url}${path}`, { headers: as(token) });
const post = (path: string, body: unknown, token: string | null = OPS, url = base) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { ...as(token), 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

async function stateOf(id: string) {
  return (await approvals.store.get(id))?.state;
}

beforeAll(async () => {
  ns = createNamespace('approvals-api');
  const pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  await pool.end();
  approvals = await openApprovals(ns);
  base = await listen(
    createApiServer({ client: ns.client, tokens: TOKENS, approvals: approvals.desk, logger }),
  );
  noDesk = await listen(createApiServer({ client: ns.client, tokens: TOKENS, logger }));
}, 60_000);

afterAll(async () => {
  await Promise.all(
    servers.map((server) => new Promise((resolve) => server.close(resolve) && server.closeAllConnections())),
  );
  await approvals?.close();
  await ns?.cleanup();
});

describe('authentication', () => {
  it('answers 401 without a token or with a wrong one, on every route, and decides nothing', async () => {
    const {
      approvals: [approval],
    } = await parkJob(approvals.tasks, approvals.store, [{}]);
    const id = approval!.id;
    for (const token of [null, 'x'.repeat(OPS.length), 'nope', `${OPS}x`]) {
      expect((await get('/v1/approvals', token)).status).toBe(401);
      expect((await get(`/v1/approvals/${id}`, token)).status).toBe(401);
      const decided = await post(`/v1/approvals/${id}`, { decision: 'approve' }, token);
      expect(decided.status).toBe(401);
      expect(await decided.json()).toEqual({ error: 'unauthorized' });
      const batch = await post('/v1/batches/b/approvals', { tool: 'send_email', decision: 'approve' }, token);
      expect(batch.status).toBe(401);
    }
    expect(await stateOf(id)).toBe('pending');
  });

  it('never logs a token', () => {
    const log = logLines.join('');
    expect(log).not.toContain(OPS);
    expect(log).not.toContain(BILLING);
  });
});

describe('one approval', () => {
  it('answers 404 for an unknown id, to a read and to a decision', async () => {
    expect((await get('/v1/approvals/apr_nope')).status).toBe(404);
    const decided = await post('/v1/approvals/apr_nope', { decision: 'approve' });
    expect(decided.status).toBe(404);
    expect(await decided.json()).toEqual({ error: 'not_found' });
    expect((await get(`/v1/approvals/${'a'.repeat(300)}`)).status).toBe(404);
  });

  it('records who decided from the token’s name: a `by` in the body is refused as an unknown field', async () => {
    const {
      approvals: [approval],
    } = await parkJob(approvals.tasks, approvals.store, [{}]);
    const id = approval!.id;
    const claimed = await post(`/v1/approvals/${id}`, { decision: 'approve', by: 'mallory' });
    expect(claimed.status).toBe(400);
    expect(await claimed.json()).toEqual({
      error: 'invalid_decision',
      issues: [{ path: 'by', message: 'unknown field' }],
    });
    expect(await stateOf(id)).toBe('pending');

    const response = await post(`/v1/approvals/${id}`, { decision: 'approve', reason: 'looks right' });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      id,
      state: 'approved',
      decision: 'approve',
      decidedBy: 'ops',
      reason: 'looks right',
      editedArguments: null,
    });
    expect(await (await get(`/v1/approvals/${id}`, BILLING)).json()).toEqual(body);
  });

  it('answers a second decision 409 with the first, which stands', async () => {
    const {
      approvals: [approval],
    } = await parkJob(approvals.tasks, approvals.store, [{}]);
    const id = approval!.id;
    expect(
      (await post(`/v1/approvals/${id}`, { decision: 'reject', reason: 'not today' }, BILLING)).status,
    ).toBe(200);
    const second = await post(`/v1/approvals/${id}`, { decision: 'approve' }, OPS);
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({
      error: 'already_decided',
      approval: { id, state: 'rejected', decidedBy: 'billing', reason: 'not today' },
    });
    expect((await approvals.store.get(id))?.decidedBy).toBe('billing');
  });

  it('refuses an edit the tool’s schema refuses, naming the field, and runs an accepted one', async () => {
    const {
      approvals: [approval],
    } = await parkJob(approvals.tasks, approvals.store, [{}]);
    const id = approval!.id;
    const edit = { to: 42, subject: 'Thanks', body: 'Thank you.' };
    const refused = await post(`/v1/approvals/${id}`, { decision: 'approve', arguments: edit });
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { error: string; issues: { path: string }[] };
    expect(body.error).toBe('invalid_decision');
    expect(body.issues.map((issue) => issue.path)).toEqual(['arguments.to']);
    expect(await stateOf(id)).toBe('pending');

    const fixed = { ...edit, to: 'ada@example.com' };
    const approved = await post(`/v1/approvals/${id}`, { decision: 'approve', arguments: fixed });
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({ state: 'approved', editedArguments: fixed });
  });

  it('refuses arguments with a reject, a bad decision and a bad body, deciding nothing', async () => {
    const {
      approvals: [approval],
    } = await parkJob(approvals.tasks, approvals.store, [{}]);
    const id = approval!.id;
    const cases: [unknown, string][] = [
      [{ decision: 'reject', reason: 'no', arguments: { to: 'x@example.com' } }, 'arguments'],
      [{ decision: 'maybe' }, 'decision'],
      [{}, 'decision'],
      [{ decision: 'reject', reason: 7 }, 'reason'],
      [{ decision: 'approve', arguments: ['not', 'an', 'object'] }, 'arguments'],
      [[{ decision: 'approve' }], ''],
    ];
    for (const [body, path] of cases) {
      const response = await post(`/v1/approvals/${id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      const answer = (await response.json()) as { error: string; issues: { path: string }[] };
      expect(answer.error).toBe('invalid_decision');
      expect(answer.issues.map((issue) => issue.path)).toContain(path);
    }
    const text = await fetch(`${base}/v1/approvals/${id}`, {
      method: 'POST',
      headers: { ...as(OPS), 'content-type': 'text/plain' },
      body: 'approve',
    });
    expect(text.status).toBe(415);
    expect((await post(`/v1/approvals/${id}`, '{"decision":')).status).toBe(400);
    expect(
      (await post(`/v1/approvals/${id}`, { decision: 'approve', reason: 'x'.repeat(70_000) })).status,
    ).toBe(413);
    expect(await stateOf(id)).toBe('pending');
  });

  it('answers with the security headers and no-store, like every route', async () => {
    const response = await get('/v1/approvals');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('listing', () => {
  it('filters by state, job, batch and tool, newest first, within a limit', async () => {
    const batchId = `batch-${randomBytes(4).toString('hex')}`;
    const mixed = await parkJob(
      approvals.tasks,
      approvals.store,
      [{}, { tool: 'post_invoice', arguments: { amount: 10 } }],
      batchId,
    );
    const list = async (query: string) => {
      const response = await get(`/v1/approvals?${query}`);
      expect(response.status, query).toBe(200);
      return ((await response.json()) as { approvals: { id: string; state: string; tool: string }[] })
        .approvals;
    };
    expect((await list(`jobId=${mixed.jobId}`)).map((a) => a.id).sort()).toEqual(
      mixed.approvals.map((a) => a.id).sort(),
    );
    expect((await list(`batchId=${batchId}&tool=post_invoice`)).map((a) => a.tool)).toEqual(['post_invoice']);
    expect(await list(`jobId=${mixed.jobId}&state=approved`)).toEqual([]);
    expect((await list('state=pending')).every((a) => a.state === 'pending')).toBe(true);
    expect(await list(`limit=1&jobId=${mixed.jobId}`)).toHaveLength(1);
  });

  it('refuses a bad state, a bad limit and an unknown parameter, naming it', async () => {
    for (const [query, path] of [
      ['state=waiting', 'state'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['status=pending', 'status'],
      ['state=pending&state=approved', 'state'],
    ]) {
      const response = await get(`/v1/approvals?${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { error: string; issues: { path: string }[] };
      expect(body.error).toBe('invalid_query');
      expect(body.issues.map((issue) => issue.path)).toContain(path);
    }
  });
});

describe('waking parked jobs', () => {
  it('a job waits while one of its calls waits, and is moved to wait by the last decision', async () => {
    const parked = await parkJob(approvals.tasks, approvals.store, [{}, {}]);
    const job = async () => (await approvals.tasks.getJob(parked.jobId))!.getState();
    const [first, second] = parked.approvals;
    expect(await job()).toBe('delayed');
    expect((await post(`/v1/approvals/${first!.id}`, { decision: 'approve' })).status).toBe(200);
    expect(await job()).toBe('delayed');
    expect(
      (await post(`/v1/approvals/${second!.id}`, { decision: 'reject', reason: 'one is enough' })).status,
    ).toBe(200);
    expect(await job()).toBe('waiting');
  });

  it('decides every waiting call of one tool in a batch at once, under the token’s name', async () => {
    const batchId = `batch-${randomBytes(4).toString('hex')}`;
    const a = await parkJob(approvals.tasks, approvals.store, [{}, {}], batchId);
    const b = await parkJob(approvals.tasks, approvals.store, [{}, { tool: 'post_invoice' }], batchId);
    // One decided before: the batch decision leaves it as it was.
    await post(`/v1/approvals/${a.approvals[0]!.id}`, { decision: 'reject', reason: 'wrong person' }, OPS);

    const response = await post(
      `/v1/batches/${batchId}/approvals`,
      { tool: 'send_email', decision: 'approve', reason: 'campaign signed off' },
      BILLING,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { decided: Record<string, unknown>[]; conflicts: number };
    expect(body.conflicts).toBe(0);
    expect(body.decided.map((approval) => approval['id']).sort()).toEqual(
      [a.approvals[1]!.id, b.approvals[0]!.id].sort(),
    );
    for (const approval of body.decided)
      expect(approval).toMatchObject({
        state: 'approved',
        decidedBy: 'billing',
        reason: 'campaign signed off',
      });
    expect(await stateOf(a.approvals[0]!.id)).toBe('rejected');
    expect(await stateOf(b.approvals[1]!.id)).toBe('pending');
    // Job a has no call waiting any more: woken. Job b still waits on its invoice.
    expect(await (await approvals.tasks.getJob(a.jobId))!.getState()).toBe('waiting');
    expect(await (await approvals.tasks.getJob(b.jobId))!.getState()).toBe('delayed');

    const again = await post(`/v1/batches/${batchId}/approvals`, { tool: 'send_email', decision: 'reject' });
    expect(await again.json()).toEqual({ decided: [], conflicts: 0 });
  });

  it('refuses a batch decision without a tool, or with an unknown field, naming it', async () => {
    for (const [body, path] of [
      [{ decision: 'approve' }, 'tool'],
      [{ tool: 'send_email', decision: 'approve', by: 'mallory' }, 'by'],
      [{ tool: 'send_email', decision: 'later' }, 'decision'],
    ] as const) {
      const response = await post('/v1/batches/any/approvals', body);
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { error: string; issues: { path: string }[] };
      expect(answer.error).toBe('invalid_decision');
      expect(answer.issues.map((issue) => issue.path)).toContain(path);
    }
  });
});

describe('the task state', () => {
  it('GET /v1/tasks/:id says awaiting_approval for a parked job, with the calls it waits on', async () => {
    const parked = await parkJob(approvals.tasks, approvals.store, [{}]);
    const response = await get(`/v1/tasks/${parked.jobId}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      state: 'awaiting_approval',
      progress: {
        status: 'awaiting_approval',
        step: 2,
        approvals: [
          { id: parked.approvals[0]!.id, tool: 'send_email', expiresAt: parked.approvals[0]!.expiresAt },
        ],
      },
      result: null,
    });
  });

  it('a job delayed for another reason (a retry) stays `delayed`', async () => {
    const job = await approvals.tasks.add('retrying', { task: 'x' }, { delay: 60_000 });
    await job.updateProgress({ step: 1, maxSteps: 8 });
    expect(await (await get(`/v1/tasks/${job.id}`)).json()).toMatchObject({ state: 'delayed' });
  });
});

describe('without a desk', () => {
  it('every approvals route answers 503 unavailable, behind the token still', async () => {
    expect((await get('/v1/approvals', null, noDesk)).status).toBe(401);
    for (const response of [
      await get('/v1/approvals', OPS, noDesk),
      await get('/v1/approvals/apr_x', OPS, noDesk),
      await post('/v1/approvals/apr_x', { decision: 'approve' }, OPS, noDesk),
      await post('/v1/batches/b/approvals', { tool: 't', decision: 'approve' }, OPS, noDesk),
    ]) {
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ error: 'unavailable' });
    }
    // The other routes are untouched.
    expect((await get('/v1/agents', OPS, noDesk)).status).toBe(200);
  });
});
