// The approvals store against the real MariaDB/MySQL, in a database of its own (af_test_approvals_<random>)
// dropped at the end: a call is asked once however often a worker parks again, decided exactly once however many
// deciders race, expired past its expiry, and listed by state, job, batch and tool. With no server every test
// fails, none is skipped.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { approvalIdOf, type NewApproval } from '../../../src/approvals/approval.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_approvals_${randomBytes(4).toString('hex')}`;
const T0 = new Date('2026-03-01T09:00:00.000Z');
const HOUR = 3_600_000;
const at = (ms: number) => new Date(T0.getTime() + ms);
const SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string', format: 'email' }, subject: { type: 'string' } },
  required: ['to', 'subject'],
};

let pool: Pool;
let store: ApprovalStore;

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new ApprovalStore(pool);
});

afterAll(async () => {
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

let jobs = 0;
const newJobId = () => `job-${++jobs}-${randomBytes(3).toString('hex')}`;

function asked(jobId: string, position: number, overrides: Partial<NewApproval> = {}): NewApproval {
  return {
    jobId,
    batchId: null,
    tenant: 'acme',
    agent: 'mailer',
    step: 2,
    callId: `call_${position}`,
    callKey: `${jobId}:2:${position}`,
    instance: '1',
    tool: 'send_email',
    arguments: { to: 'ada@example.com', subject: 'Q3 — ünïcødé ✓' },
    argumentsSchema: SCHEMA,
    requestedAt: T0,
    expiresAt: at(HOUR),
    ...overrides,
  };
}

describe('ApprovalStore.request', () => {
  it('inserts each call once: asked again, a row keeps its first times and is not answered as inserted', async () => {
    const jobId = newJobId();
    const rows = [asked(jobId, 0), asked(jobId, 1, { argumentsSchema: null })];
    const ids = rows.map((row) => approvalIdOf(row.callKey, '1'));
    expect(await store.request(rows)).toEqual({ inserted: ids });
    const again = rows.map((row) => ({ ...row, requestedAt: at(HOUR), expiresAt: at(2 * HOUR) }));
    expect(await store.request([...again, asked(jobId, 2)])).toEqual({
      inserted: [approvalIdOf(`${jobId}:2:2`, '1')],
    });
    expect(await store.get(ids[0]!)).toEqual({
      id: ids[0],
      jobId,
      batchId: null,
      tenant: 'acme',
      agent: 'mailer',
      step: 2,
      callId: 'call_0',
      callKey: `${jobId}:2:0`,
      tool: 'send_email',
      arguments: { to: 'ada@example.com', subject: 'Q3 — ünïcødé ✓' },
      state: 'pending',
      requestedAt: T0.toISOString(),
      expiresAt: at(HOUR).toISOString(),
      decidedBy: null,
      decision: null,
      reason: null,
      editedArguments: null,
      decidedAt: null,
    });
    expect(await store.argumentsSchemaOf(ids[0]!)).toEqual(SCHEMA);
    expect(await store.argumentsSchemaOf(ids[1]!)).toBeNull();
    expect(await store.get('apr_missing')).toBeNull();
  });

  it('answers the calls of a job by key, in step order, and nothing for keys never asked', async () => {
    const jobId = newJobId();
    await store.request([asked(jobId, 0), asked(jobId, 1), asked(newJobId(), 0)]);
    const found = await store.forCalls(jobId, '1', [`${jobId}:2:1`, `${jobId}:2:0`, `${jobId}:9:0`]);
    expect(found.map((a) => a.callKey)).toEqual([`${jobId}:2:0`, `${jobId}:2:1`]);
    expect(await store.forCalls(jobId, '1', [])).toEqual([]);
    expect(await store.pendingCount(jobId)).toBe(2);
  });
});

describe('ApprovalStore.decide', () => {
  it('records a decision exactly once when 20 deciders race; the others see a conflict', async () => {
    const jobId = newJobId();
    const {
      inserted: [id],
    } = await store.request([asked(jobId, 0)]);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.decide(
          id!,
          { decision: i % 2 ? 'approve' : 'reject', by: `user-${i}`, reason: `r${i}` },
          at(60_000),
        ),
      ),
    );
    expect(results.filter((r) => r === 'decided')).toHaveLength(1);
    expect(results.filter((r) => r === 'conflict')).toHaveLength(19);
    const winner = results.indexOf('decided');
    const approval = await store.get(id!);
    expect(approval).toMatchObject({
      state: winner % 2 ? 'approved' : 'rejected',
      decision: winner % 2 ? 'approve' : 'reject',
      decidedBy: `user-${winner}`,
      reason: `r${winner}`,
      decidedAt: at(60_000).toISOString(),
    });
    expect(await store.pendingCount(jobId)).toBe(0);
  });

  it('keeps edited arguments with an approval only, and answers not_found for no such approval', async () => {
    const jobId = newJobId();
    const { inserted } = await store.request([asked(jobId, 0), asked(jobId, 1)]);
    const edit = { to: 'grace@example.com', subject: 'edited' };
    expect(
      await store.decide(inserted[0]!, { decision: 'approve', by: 'ada', editedArguments: edit }, T0),
    ).toBe('decided');
    expect(
      await store.decide(inserted[1]!, { decision: 'reject', by: 'ada', editedArguments: edit }, T0),
    ).toBe('decided');
    expect(await store.get(inserted[0]!)).toMatchObject({
      state: 'approved',
      editedArguments: edit,
      reason: null,
    });
    expect(await store.get(inserted[1]!)).toMatchObject({ state: 'rejected', editedArguments: null });
    expect(await store.decide('apr_nope', { decision: 'approve', by: 'ada' }, T0)).toBe('not_found');
  });

  it('never decides a call past its expiry: it is expired (reject, reason expired, by nobody) and a conflict', async () => {
    const jobId = newJobId();
    const {
      inserted: [id],
    } = await store.request([asked(jobId, 0)]);
    expect(await store.decide(id!, { decision: 'approve', by: 'ada' }, at(HOUR))).toBe('conflict');
    expect(await store.get(id!)).toMatchObject({
      state: 'expired',
      decision: 'reject',
      reason: 'expired',
      decidedBy: null,
      decidedAt: at(HOUR).toISOString(),
    });
  });
});

describe('ApprovalStore.expireDue', () => {
  it('expires the pending calls past their expiry, of one job or all, and leaves decided ones as they were', async () => {
    const [a, b] = [newJobId(), newJobId()];
    await store.request([
      asked(a, 0, { expiresAt: at(HOUR) }),
      asked(a, 1, { expiresAt: at(3 * HOUR) }),
      asked(b, 0, { expiresAt: at(HOUR) }),
      asked(b, 1, { expiresAt: at(HOUR) }),
    ]);
    await store.decide(approvalIdOf(`${b}:2:1`, '1'), { decision: 'approve', by: 'ada' }, T0);
    const now = at(2 * HOUR);
    expect(await store.expireDue(now, a)).toMatchObject([
      {
        id: approvalIdOf(`${a}:2:0`, '1'),
        state: 'expired',
        reason: 'expired',
        decidedAt: now.toISOString(),
      },
    ]);
    expect(await store.pendingCount(a)).toBe(1);
    expect(await store.pendingCount(b)).toBe(1);
    expect((await store.expireDue(now)).map((approval) => approval.id)).toContain(
      approvalIdOf(`${b}:2:0`, '1'),
    );
    expect(await store.pendingCount(b)).toBe(0);
    expect((await store.get(approvalIdOf(`${b}:2:1`, '1')))?.state).toBe('approved');
    expect((await store.get(approvalIdOf(`${a}:2:1`, '1')))?.state).toBe('pending');
    expect(await store.expireDue(now)).toEqual([]);
  });
});

describe('ApprovalStore.list and forBatch', () => {
  it('filters by state, job, batch and tool, newest first, to the limit', async () => {
    const jobId = newJobId();
    const batchId = `batch-${randomBytes(3).toString('hex')}`;
    await store.request([
      asked(jobId, 0, { batchId, requestedAt: at(1_000) }),
      asked(jobId, 1, { batchId, requestedAt: at(2_000), tool: 'sql_write' }),
      asked(jobId, 2, { batchId, requestedAt: at(3_000) }),
      asked(newJobId(), 0, { batchId, requestedAt: at(4_000) }),
    ]);
    await store.decide(
      approvalIdOf(`${jobId}:2:2`, '1'),
      { decision: 'reject', by: 'ada', reason: 'no' },
      T0,
    );
    const keys = (list: { callKey: string }[]) => list.map((a) => a.callKey);
    expect(keys(await store.list({ jobId }))).toEqual([`${jobId}:2:2`, `${jobId}:2:1`, `${jobId}:2:0`]);
    expect(keys(await store.list({ jobId, state: 'pending' }))).toEqual([`${jobId}:2:1`, `${jobId}:2:0`]);
    expect(keys(await store.list({ jobId, tool: 'sql_write' }))).toEqual([`${jobId}:2:1`]);
    expect(keys(await store.list({ jobId, limit: 1 }))).toEqual([`${jobId}:2:2`]);
    expect(await store.list({ batchId })).toHaveLength(4);
    expect(await store.list({ batchId, limit: 0 })).toHaveLength(1);
    expect(await store.list({ batchId: 'no-such-batch' })).toEqual([]);
    // A batch's report reads them all, oldest first.
    const forBatch = await store.forBatch(batchId);
    expect(forBatch.map((a) => a.requestedAt)).toEqual(
      [1_000, 2_000, 3_000, 4_000].map((ms) => at(ms).toISOString()),
    );
    expect(forBatch.map((a) => a.state)).toEqual(['pending', 'pending', 'rejected', 'pending']);
  });
});

describe('ApprovalStore.pendingStats', () => {
  it('counts the calls waiting now and the age of the oldest; decided and past-expiry ones wait no more', async () => {
    await pool.query('DELETE FROM agent_approvals');
    const now = at(10 * 60_000);
    expect(await store.pendingStats(now)).toEqual({ count: 0, oldestAgeSeconds: 0 });
    const jobId = newJobId();
    await store.request([
      asked(jobId, 0, { requestedAt: at(-5 * 60_000), expiresAt: at(5 * 60_000) }), // past expiry at `now`
      asked(jobId, 1, { requestedAt: at(0) }),
      asked(jobId, 2, { requestedAt: at(4 * 60_000) }),
      asked(jobId, 3, { requestedAt: at(-60 * 60_000) }),
    ]);
    await store.decide(approvalIdOf(`${jobId}:2:3`, '1'), { decision: 'approve', by: 'ada' }, T0);
    expect(await store.pendingStats(now)).toEqual({ count: 2, oldestAgeSeconds: 600 });
  });
});
