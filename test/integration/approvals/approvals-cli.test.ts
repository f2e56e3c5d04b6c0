// `npm run approvals` as a process (`node --import tsx scripts/approvals.ts`) against the real MariaDB and Redis,
// under a database and queue prefix of its own: it lists, shows and decides as shell:<user>, wakes the parked
// job, exits 1 with the first decision on a conflict and 2 on a bad flag it names. With no server every test
// fails, none is skipped.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import type { Approval, NewApproval } from '../../../src/approvals/approval.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { approvalEventJobId } from '../../../src/approvals/approval-events.js';
import { EVENTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const ME = `shell:${userInfo().username}`;
const HOUR = 3_600_000;
const SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string', format: 'email' }, subject: { type: 'string' } },
  required: ['to', 'subject'],
  additionalProperties: false,
};

let ns: FleetNamespace;
let pool: Pool;
let redis: Redis;
let tasks: Queue;
let events: Queue;
let store: ApprovalStore;

setupOrFail(async () => {
  ns = createNamespace('approvals_cli');
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

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function approvals(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/approvals.ts', ...args], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        MYSQL_URL: ns.mysqlUrl,
        REDIS_URL,
        QUEUE_PREFIX: ns.prefix,
        LOG_LEVEL: 'silent',
      },
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

let jobs = 0;
const newJobId = () => `job-${++jobs}-${randomBytes(3).toString('hex')}`;

/** Asks for approval of calls of a job; the requests are made now, so they are pending for the CLI. */
async function ask(jobId: string, count: number, overrides: Partial<NewApproval> = {}): Promise<string[]> {
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => ({
    jobId,
    batchId: null,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: `call_${i}`,
    callKey: `${jobId}:1:${i}`,
    instance: '1',
    tool: 'send_email',
    arguments: { to: 'ada@example.com', subject: `report ${i}` },
    argumentsSchema: SCHEMA,
    requestedAt: new Date(now + i),
    expiresAt: new Date(now + HOUR),
    ...overrides,
  }));
  return (await store.request(rows)).inserted;
}

describe('npm run approvals -- list and show', () => {
  it('prints a table, JSON with --json, filtered by state and job', async () => {
    const jobId = newJobId();
    const [first, second] = await ask(jobId, 2);
    await store.decide(second!, { decision: 'reject', by: 'bob', reason: 'no' }, new Date());
    const table = await approvals(['list', '--job', jobId]);
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+TOOL\s+JOB\s+STEP\s+REQUESTED\s+DECIDED\s+BY\s+ARGUMENTS$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 2))).toEqual([
      [second, 'rejected'],
      [first, 'pending'],
    ]);
    const json = await approvals(['list', '--job', jobId, '--state', 'pending', '--json']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as Approval[]).map((a) => a.id)).toEqual([first]);
    const show = await approvals(['show', first!]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: first, jobId, state: 'pending', tool: 'send_email' });
    const missing = await approvals(['show', 'apr_missing']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain('no approval "apr_missing"');
  });

  it('refuses a bad flag with exit 2, naming it, and the usage', async () => {
    for (const [args, named] of [
      [['list', '--state', 'maybe'], '--state'],
      [['list', '--frobnicate'], '--frobnicate'],
      [['reject', 'apr_x'], '--reason'],
      [['reject', 'apr_x', '--reason', 'no', '--arguments', '{}'], '--arguments'],
      [['approve', 'apr_x', '--arguments', '{"to":'], '--arguments'],
      [['approve', '--batch', 'b1'], '--tool'],
    ] as const) {
      const run = await approvals([...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toContain(named);
      expect(run.stderr).toContain('usage: npm run approvals');
    }
  });
});

describe('npm run approvals -- approve and reject', () => {
  it('approves with edited arguments as shell:<user>, waking the parked job; again: exit 1, the first decision', async () => {
    const jobId = newJobId();
    await tasks.add('mailer: send the report', { task: 'send the report' }, { jobId, delay: HOUR });
    const [id] = await ask(jobId, 1);
    const edited = { to: 'grace@example.com', subject: 'report (edited)' };
    const run = await approvals([
      'approve',
      id!,
      '--arguments',
      JSON.stringify(edited),
      '--reason',
      'checked',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`approved ${id}`);
    expect(await store.get(id!)).toMatchObject({ state: 'approved', decidedBy: ME, editedArguments: edited });
    expect(await tasks.getJobState(jobId)).toBe('waiting');
    expect(await events.getJob(approvalEventJobId('approval.decided', id!))).toBeTruthy();

    const again = await approvals(['reject', id!, '--reason', 'changed my mind']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already decided');
    expect(again.stderr).toContain(`approved ${id}`);
    expect(again.stderr).toContain(`by ${ME}`);
    expect((await store.get(id!))?.state).toBe('approved');
  });

  it('rejects with a reason; refuses an edit the schema refuses with exit 1 naming the field', async () => {
    const jobId = newJobId();
    const [rejected, edited] = await ask(jobId, 2);
    const run = await approvals(['reject', rejected!, '--reason', 'wrong recipients']);
    expect(run.code).toBe(0);
    expect(await store.get(rejected!)).toMatchObject({
      state: 'rejected',
      decidedBy: ME,
      reason: 'wrong recipients',
    });
    const refused = await approvals(['approve', edited!, '--arguments', '{"to":"nobody","subject":"x"}']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--arguments: to:');
    expect((await store.get(edited!))?.state).toBe('pending');
    const missing = await approvals(['approve', 'apr_missing']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no approval');
  });

  it("decides a batch's waiting calls to one tool at once", async () => {
    const batchId = `batch-${randomBytes(3).toString('hex')}`;
    const [a, b] = [newJobId(), newJobId()];
    const ids = [...(await ask(a, 2, { batchId })), ...(await ask(b, 1, { batchId }))];
    const [other] = await ask(newJobId(), 1, { batchId, tool: 'sql_write' });
    const run = await approvals([
      'reject',
      '--batch',
      batchId,
      '--tool',
      'send_email',
      '--reason',
      'batch is off',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('rejected 3 waiting call(s) of send_email');
    for (const id of ids) {
      expect(await store.get(id)).toMatchObject({ state: 'rejected', reason: 'batch is off', decidedBy: ME });
    }
    expect((await store.get(other!))?.state).toBe('pending');
    const json = await approvals(['approve', '--batch', batchId, '--tool', 'send_email', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ decided: [], conflicts: 0 });
  });
});
