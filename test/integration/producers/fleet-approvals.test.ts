// FleetApprovals, the client library's approvals client, against the real API on an ephemeral port (real MariaDB
// store and Redis, jobs parked as a worker parks them): each call, and each refusal as its own error class.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../../producers/http-api.js';
import {
  ApprovalConflictError,
  ApprovalNotFoundError,
  ApprovalRefusedError,
  FleetApiAuthError,
  FleetApiError,
  FleetApprovals,
} from '../../../src/client.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { createNamespace, type FleetNamespace } from '../../support/fleet-harness.js';
import { parkJob } from '../../support/parked-jobs.js';

const OPS = `ops-${randomBytes(16).toString('hex')}`;
const AUDIT = `audit-${randomBytes(16).toString('hex')}`;

let ns: FleetNamespace;
let harness: ApprovalsHarness;
let server: Server;
let url = '';
let ops: FleetApprovals;
let audit: FleetApprovals;

beforeAll(async () => {
  ns = createNamespace('fleet-approvals');
  const pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  await pool.end();
  harness = await openApprovals(ns);
  const app = createApiServer({
    client: ns.client,
    tokens: [
      { name: 'ops', token: OPS },
      { name: 'audit', token: AUDIT },
    ],
    approvals: harness.desk,
    logger: pino({ level: 'silent' }),
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  ops = new FleetApprovals({ url, token: OPS });
  audit = new FleetApprovals({ url, token: AUDIT });
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve) && server.closeAllConnections());
  await harness?.close();
  await ns?.cleanup();
});

const park = (calls = [{}], batchId: string | null = null) =>
  parkJob(harness.tasks, harness.store, calls, batchId);

describe('FleetApprovals', () => {
  it('lists with filters and reads one', async () => {
    const parked = await park([{}, { tool: 'post_invoice' }]);
    const listed = await ops.list({ jobId: parked.jobId, state: 'pending' });
    expect(listed.map((approval) => approval.id).sort()).toEqual(parked.approvals.map((a) => a.id).sort());
    expect(
      (await ops.list({ jobId: parked.jobId, tool: 'post_invoice', limit: 5 })).map((a) => a.tool),
    ).toEqual(['post_invoice']);
    const one = await ops.get(parked.approvals[0]!.id);
    expect(one).toMatchObject({ id: parked.approvals[0]!.id, jobId: parked.jobId, state: 'pending' });
  });

  it('approves, with an edit, under the token’s name, and wakes the job', async () => {
    const parked = await park();
    const edit = { to: 'ada@example.com', subject: 'Thanks', body: 'Thank you, Ada.' };
    const approved = await ops.approve(parked.approvals[0]!.id, { reason: 'checked', arguments: edit });
    expect(approved).toMatchObject({
      state: 'approved',
      decidedBy: 'ops',
      reason: 'checked',
      editedArguments: edit,
    });
    expect(await (await harness.tasks.getJob(parked.jobId))!.getState()).toBe('waiting');
  });

  it('rejects with a reason', async () => {
    const parked = await park();
    const rejected = await audit.reject(parked.approvals[0]!.id, { reason: 'wrong customer' });
    expect(rejected).toMatchObject({
      state: 'rejected',
      decision: 'reject',
      decidedBy: 'audit',
      reason: 'wrong customer',
    });
  });

  it('a second decision throws ApprovalConflictError carrying the first', async () => {
    const parked = await park();
    const id = parked.approvals[0]!.id;
    await ops.approve(id);
    const error = await audit.reject(id, { reason: 'too late' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApprovalConflictError);
    expect(error).toBeInstanceOf(FleetApiError);
    expect((error as ApprovalConflictError).status).toBe(409);
    expect((error as ApprovalConflictError).approval).toMatchObject({
      id,
      state: 'approved',
      decidedBy: 'ops',
    });
  });

  it('an unknown id throws ApprovalNotFoundError', async () => {
    await expect(ops.get('apr_missing')).rejects.toBeInstanceOf(ApprovalNotFoundError);
    await expect(ops.approve('apr_missing')).rejects.toBeInstanceOf(ApprovalNotFoundError);
  });

  it('a refused edit throws ApprovalRefusedError naming the field', async () => {
    const parked = await park();
    const error = await ops
      .approve(parked.approvals[0]!.id, { arguments: { to: 42, subject: 'Hi', body: 'Hello' } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApprovalRefusedError);
    expect((error as ApprovalRefusedError).code).toBe('invalid_decision');
    expect((error as ApprovalRefusedError).issues.map((issue) => issue.path)).toEqual(['arguments.to']);
    expect((await ops.get(parked.approvals[0]!.id)).state).toBe('pending');
  });

  it('a wrong token throws FleetApiAuthError, whose message carries no token', async () => {
    const wrong = new FleetApprovals({ url, token: 'not-a-token-of-this-api' });
    const error = await wrong.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FleetApiAuthError);
    expect((error as FleetApiAuthError).status).toBe(401);
    expect((error as Error).message).not.toContain('not-a-token-of-this-api');
  });

  it('decides a batch’s calls of one tool at once', async () => {
    const batchId = `batch-${randomBytes(4).toString('hex')}`;
    const a = await park([{}, { tool: 'post_invoice' }], batchId);
    const b = await park([{}], batchId);
    const result = await audit.decideBatch(batchId, 'send_email', 'reject', 'campaign cancelled');
    expect(result.conflicts).toBe(0);
    expect(result.decided.map((approval) => approval.id).sort()).toEqual(
      [a.approvals[0]!.id, b.approvals[0]!.id].sort(),
    );
    expect(result.decided.every((approval) => approval.decidedBy === 'audit')).toBe(true);
    expect((await ops.get(a.approvals[1]!.id)).state).toBe('pending');
  });

  it('uses the fetch it is given', async () => {
    const seen: string[] = [];
    const traced = new FleetApprovals({
      url,
      token: OPS,
      fetch: (input, init) => {
        seen.push(`${init?.method ?? 'GET'} ${String(input)}`);
        return fetch(input, init);
      },
    });
    await traced.list({ state: 'expired' });
    expect(seen).toEqual([`GET ${url.replace(/\/$/, '')}/v1/approvals?state=expired`]);
  });
});
