// The decision desk against the real MariaDB and Redis, under a database and queue prefix of its own: decisions
// checked field by field (an edit against the tool's JSON Schema), recorded once, the parked job woken only when
// its last waiting call is decided (a real delayed BullMQ job moves to wait), and each event published once.
// With no server every test fails, none is skipped.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { approvalIdOf, type NewApproval } from '../../../src/approvals/approval.js';
import { ApprovalDesk, InvalidDecisionError, type DeskLogger } from '../../../src/approvals/approval-desk.js';
import { ApprovalEvents, approvalEventJobId } from '../../../src/approvals/approval-events.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { wakeParkedJob } from '../../../src/approvals/wake-parked-job.js';
import { EVENTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-01T09:00:00.000Z');
/** What the model was shown for send_email, as the worker stores it with the approval. */
const SCHEMA = z.toJSONSchema(z.object({ to: z.email(), subject: z.string().max(80) }).strict(), {
  target: 'draft-7',
  io: 'input',
}) as Record<string, unknown>;

let ns: FleetNamespace;
let pool: Pool;
let redis: Redis;
let tasks: Queue;
let events: Queue;
let store: ApprovalStore;
let clock = T0;

setupOrFail(async () => {
  ns = createNamespace('approvals_desk');
  pool = await createStorePool(ns.mysqlUrl);
  await migrate(pool);
  store = new ApprovalStore(pool);
  redis = createRedis(REDIS_URL, 'producer');
  tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  events = new Queue(EVENTS_QUEUE, { connection: redis, prefix: ns.prefix });
});

afterAll(async () => {
  await tasks?.close();
  await events?.close();
  redis?.disconnect();
  await pool?.end();
  await ns?.cleanup();
});

let jobs = 0;
const newJobId = () => `job-${++jobs}-${randomBytes(3).toString('hex')}`;

function asked(jobId: string, position: number, overrides: Partial<NewApproval> = {}): NewApproval {
  return {
    jobId,
    batchId: null,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: `call_${position}`,
    callKey: `${jobId}:1:${position}`,
    instance: '1',
    tool: 'send_email',
    arguments: { to: 'ada@example.com', subject: 'Q3 figures' },
    argumentsSchema: SCHEMA,
    requestedAt: new Date(T0),
    expiresAt: new Date(T0 + HOUR),
    ...overrides,
  };
}

async function ask(...rows: NewApproval[]): Promise<string[]> {
  return (await store.request(rows)).inserted;
}

function deskWith(options: { wake?: (jobId: string) => Promise<unknown>; logger?: DeskLogger } = {}) {
  const wake = vi.fn(options.wake ?? (async () => undefined));
  const desk = new ApprovalDesk({
    store,
    wake,
    events: new ApprovalEvents(events),
    now: () => clock,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  return { desk, wake };
}

describe('ApprovalDesk.decide refuses, naming the field', () => {
  it('an edit the tool schema refuses (arguments.to, an unknown key), and leaves the call waiting', async () => {
    const [id] = await ask(asked(newJobId(), 0));
    const { desk, wake } = deskWith();
    const outcome = await desk.decide(id!, {
      decision: 'approve',
      by: 'ada',
      arguments: { to: 'not an address', subject: 'Q3', cc: 'x@example.com' },
    });
    expect(outcome.kind).toBe('invalid');
    const paths = outcome.kind === 'invalid' ? outcome.issues.map((issue) => issue.path) : [];
    expect(paths).toContain('arguments.to');
    expect(paths).toContain('arguments.cc');
    expect((await store.get(id!))?.state).toBe('pending');
    expect(wake).not.toHaveBeenCalled();
    const edited = { to: 'grace@example.com', subject: 'Q3 (edited)' };
    const approved = await desk.decide(id!, { decision: 'approve', by: 'ada', arguments: edited });
    expect(approved).toMatchObject({
      kind: 'decided',
      approval: { state: 'approved', editedArguments: edited },
    });
  });

  it('arguments with a reject, a bad decision, a long reason, arguments not an object, nobody deciding', async () => {
    const [id] = await ask(asked(newJobId(), 0));
    const { desk } = deskWith();
    const pathsOf = async (input: unknown) => {
      const outcome = await desk.decide(id!, input as Parameters<ApprovalDesk['decide']>[1]);
      return outcome.kind === 'invalid' ? outcome.issues.map((issue) => issue.path) : outcome.kind;
    };
    expect(await pathsOf({ decision: 'reject', by: 'ada', reason: 'no', arguments: { to: 'x' } })).toEqual([
      'arguments',
    ]);
    expect(await pathsOf({ decision: 'maybe', by: 'ada' })).toEqual(['decision']);
    expect(await pathsOf({ decision: 'reject', by: 'ada', reason: 'x'.repeat(2_001) })).toEqual(['reason']);
    expect(await pathsOf({ decision: 'approve', by: 'ada', arguments: ['a'] })).toEqual(['arguments']);
    expect(await pathsOf({ decision: 'approve', by: 'ada', arguments: { at: new Date() } })).toEqual([
      'arguments',
    ]);
    expect(await pathsOf({ decision: 'approve', by: '  ' })).toEqual(['by']);
    expect((await store.get(id!))?.state).toBe('pending');
    expect(await pathsOf({ decision: 'reject', by: 'ada', reason: 'x'.repeat(2_000) })).toBe('decided');
  });

  it('not_found for no such approval; conflict with the first decision for one decided before', async () => {
    const [id] = await ask(asked(newJobId(), 0));
    const { desk } = deskWith();
    expect(await desk.decide('apr_nope', { decision: 'approve', by: 'ada' })).toEqual({ kind: 'not_found' });
    await desk.decide(id!, { decision: 'reject', by: 'ada', reason: 'too early' });
    for (const input of [
      { decision: 'approve' as const, by: 'bob' },
      { decision: 'approve' as const, by: 'bob', arguments: { to: 'bob@example.com', subject: 'x' } },
    ]) {
      expect(await desk.decide(id!, input)).toMatchObject({
        kind: 'conflict',
        approval: { state: 'rejected', decidedBy: 'ada', reason: 'too early' },
      });
    }
  });
});

describe('ApprovalDesk wakes the parked job', () => {
  it('only when the last waiting call of the job is decided', async () => {
    const jobId = newJobId();
    const [first, second] = await ask(asked(jobId, 0), asked(jobId, 1));
    const other = await ask(asked(newJobId(), 0));
    const { desk, wake } = deskWith();
    await desk.decide(first!, { decision: 'approve', by: 'ada' });
    await desk.decide(other[0]!, { decision: 'approve', by: 'ada' });
    expect(wake.mock.calls.map(([woken]) => woken)).not.toContain(jobId);
    await desk.decide(second!, { decision: 'reject', by: 'ada', reason: 'not this one' });
    expect(wake.mock.calls.filter(([woken]) => woken === jobId)).toHaveLength(1);
  });

  it('not held back by a call of the job past its expiry, which it expires', async () => {
    const jobId = newJobId();
    const [soon, later] = await ask(
      asked(jobId, 0, { expiresAt: new Date(T0 + 60_000) }),
      asked(jobId, 1, { expiresAt: new Date(T0 + HOUR) }),
    );
    const { desk, wake } = deskWith();
    clock = T0 + 120_000;
    try {
      await desk.decide(later!, { decision: 'approve', by: 'ada' });
    } finally {
      clock = T0;
    }
    expect(wake).toHaveBeenCalledWith(jobId);
    expect((await store.get(soon!))?.state).toBe('expired');
  });

  it('moves a real delayed BullMQ job to wait; a job not delayed, or none, is left alone', async () => {
    const jobId = newJobId();
    await tasks.add('mailer: send the figures', { task: 'send the figures' }, { jobId, delay: HOUR });
    const [id] = await ask(asked(jobId, 0));
    const { desk } = deskWith({ wake: (woken) => wakeParkedJob(tasks, woken) });
    expect(await tasks.getJobState(jobId)).toBe('delayed');
    await desk.decide(id!, { decision: 'approve', by: 'ada' });
    expect(await tasks.getJobState(jobId)).toBe('waiting');
    expect(await wakeParkedJob(tasks, jobId)).toBe(false);
    expect(await wakeParkedJob(tasks, 'no-such-job')).toBe(false);
  });

  it('logs a failed wake and keeps the decision', async () => {
    const jobId = newJobId();
    const [id] = await ask(asked(jobId, 0));
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const { desk } = deskWith({
      wake: () => Promise.reject(new Error('redis://:hunter2@redis:6379 is down')),
      logger: { warn: (fields, message) => warnings.push({ fields, message }) },
    });
    expect(await desk.decide(id!, { decision: 'approve', by: 'ada' })).toMatchObject({ kind: 'decided' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ fields: { approvalId: id, jobId } });
    expect(JSON.stringify(warnings)).not.toContain('hunter2');
  });
});

describe('ApprovalDesk answers the decider', () => {
  it('when the wake and the event never answer (Redis away): each is given up after followUpTimeoutMs', async () => {
    const [id] = await ask(asked(newJobId(), 0));
    const warnings: string[] = [];
    const desk = new ApprovalDesk({
      store,
      wake: () => new Promise(() => undefined),
      events: { decided: () => new Promise(() => undefined) },
      now: () => clock,
      logger: { warn: (_fields, message) => warnings.push(message) },
      followUpTimeoutMs: 50,
    });
    expect(await desk.decide(id!, { decision: 'approve', by: 'ada' })).toMatchObject({ kind: 'decided' });
    expect(warnings).toHaveLength(2);
  });
});

describe('ApprovalDesk events', () => {
  it('publishes approval.decided once per decision, and a request once however often it is sent', async () => {
    const jobId = newJobId();
    const [id] = await ask(asked(jobId, 0, { batchId: 'b-events', tenant: 'acme' }));
    const publisher = new ApprovalEvents(events);
    const pending = await store.get(id!);
    await publisher.requested(pending!);
    await publisher.requested(pending!);
    const { desk } = deskWith();
    await desk.decide(id!, { decision: 'reject', by: 'ada', reason: 'wrong list' });
    await desk.decide(id!, { decision: 'approve', by: 'bob' });
    const requested = await events.getJob(approvalEventJobId('approval.requested', id!));
    const decided = await events.getJob(approvalEventJobId('approval.decided', id!));
    expect(requested?.name).toBe('approval.requested');
    expect(requested?.data).toMatchObject({
      type: 'approval.requested',
      approvalId: id,
      jobId,
      state: 'pending',
    });
    expect(decided?.name).toBe('approval.decided');
    expect(decided?.data).toEqual({
      type: 'approval.decided',
      approvalId: id,
      jobId,
      batchId: 'b-events',
      tenant: 'acme',
      agent: 'mailer',
      step: 1,
      tool: 'send_email',
      arguments: { to: 'ada@example.com', subject: 'Q3 figures' },
      requestedAt: new Date(T0).toISOString(),
      expiresAt: new Date(T0 + HOUR).toISOString(),
      state: 'rejected',
      decision: 'reject',
      decidedBy: 'ada',
      reason: 'wrong list',
      editedArguments: null,
      decidedAt: new Date(T0).toISOString(),
    });
    expect(decided?.opts.removeOnComplete).toEqual({ age: 7 * 24 * 3600, count: 1_000 });
    const mine = (await events.getJobs(['waiting'])).filter((job) => job.data.approvalId === id);
    expect(mine.map((job) => job.name).sort()).toEqual(['approval.decided', 'approval.requested']);
  });

  it('trims waiting events nobody consumes to the kept count', async () => {
    const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix: `${ns.prefix}-trim` });
    try {
      const publisher = new ApprovalEvents(queue, { keep: { age: 3600, count: 2 }, trimEveryMs: 0 });
      for (let i = 0; i < 5; i++) {
        const [id] = await ask(asked(newJobId(), 0));
        await publisher.requested((await store.get(id!))!);
      }
      expect(await queue.getWaitingCount()).toBe(2);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});

describe('ApprovalDesk list, get and decideBatch', () => {
  it('list and get expire what is due first: no stale pending call is shown', async () => {
    const jobId = newJobId();
    const [id] = await ask(asked(jobId, 0, { expiresAt: new Date(T0 + 60_000) }));
    const { desk } = deskWith();
    expect((await desk.get(id!))?.state).toBe('pending');
    clock = T0 + 60_000;
    try {
      expect((await desk.list({ jobId }))[0]?.state).toBe('expired');
      expect(await desk.get(id!)).toMatchObject({ state: 'expired', decision: 'reject', reason: 'expired' });
    } finally {
      clock = T0;
    }
    // An expiry is a decision nobody made: a service that asked someone is told it is over.
    const event = await events.getJob(approvalEventJobId('approval.decided', id!));
    expect(event?.data).toMatchObject({
      type: 'approval.decided',
      approvalId: id,
      state: 'expired',
      reason: 'expired',
    });
  });

  it('a decision that finds its call expired answers conflict, and agent-events is told of the expiry', async () => {
    const [id] = await ask(asked(newJobId(), 0, { expiresAt: new Date(T0 + 60_000) }));
    const { desk, wake } = deskWith();
    clock = T0 + 60_000;
    try {
      const outcome = await desk.decide(id!, { decision: 'approve', by: 'ada' });
      expect(outcome).toMatchObject({ kind: 'conflict', approval: { state: 'expired' } });
    } finally {
      clock = T0;
    }
    expect(wake).not.toHaveBeenCalled();
    const event = await events.getJob(approvalEventJobId('approval.decided', id!));
    expect(event?.data).toMatchObject({ approvalId: id, state: 'expired', decidedBy: null });
  });

  it("decides every waiting call of a batch's tool, waking each job once, leaving other tools waiting", async () => {
    const batchId = `batch-${randomBytes(3).toString('hex')}`;
    const [a, b] = [newJobId(), newJobId()];
    await ask(
      asked(a, 0, { batchId }),
      asked(a, 1, { batchId }),
      asked(b, 0, { batchId }),
      asked(b, 1, { batchId, tool: 'sql_write' }),
    );
    await store.decide(
      approvalIdOf(`${a}:1:1`, '1'),
      { decision: 'reject', by: 'bob', reason: 'no' },
      new Date(T0),
    );
    const { desk, wake } = deskWith();
    const result = await desk.decideBatch({ batchId, tool: 'send_email', decision: 'approve', by: 'ada' });
    expect(result.conflicts).toBe(0);
    expect(result.decided.map((approval) => approval.callKey).sort()).toEqual([`${a}:1:0`, `${b}:1:0`]);
    expect(result.decided.every((approval) => approval.decidedBy === 'ada')).toBe(true);
    expect(wake.mock.calls.map(([jobId]) => jobId)).toEqual([a]);
    expect((await store.get(approvalIdOf(`${b}:1:1`, '1')))?.state).toBe('pending');
    await expect(
      desk.decideBatch({ batchId: '', tool: '', decision: 'reject', by: 'ada', reason: 'x' }),
    ).rejects.toMatchObject({
      constructor: InvalidDecisionError,
      issues: [
        { path: 'batchId', message: expect.any(String) },
        { path: 'tool', message: expect.any(String) },
      ],
    });
  });
});
