// A decision made while a worker parks a job (after the approvals are recorded, before the job is in `delayed`)
// finds the job active, so the desk's promote does nothing; the worker reads the approvals once more after the
// move and promotes the job itself. If that one read fails (a MySQL blip), it promotes the job anyway: a job
// woken with nothing decided parks again, one left asleep would wait until its expiry (a day by default).
import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApprovalDesk } from '../../../src/approvals/approval-desk.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { wakeParkedJob } from '../../../src/approvals/wake-parked-job.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { ApprovalParking } from '../../../src/worker/approval-parking.js';
import { REDIS_URL } from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_rt_wake_${randomBytes(4).toString('hex')}`;
const PREFIX = `test-rt-wake-${randomBytes(4).toString('hex')}`;
let pool: Pool;
let store: ApprovalStore;
let connection: Redis;
let queue: Queue;
let worker: Worker | undefined;

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new ApprovalStore(pool);
  connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  queue = new Queue('agent-tasks', { connection, prefix: PREFIX });
});
afterAll(async () => {
  await worker?.close(true);
  await queue?.close();
  if (connection) {
    await deleteKeysWithPrefix(connection, PREFIX);
    connection.disconnect();
  }
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

const tools = new ToolRegistry([
  defineTool({
    name: 'pay',
    description: 'Pay.',
    parameters: z.object({ to: z.string() }),
    needsApproval: true,
    async execute() {
      return 'paid';
    },
  }),
]);
const log = { info() {}, warn() {}, debug() {}, error() {}, child: () => log } as never;

describe('a decision made while the job is being parked', () => {
  it('still wakes the job when the read after the move fails once', async () => {
    const desk = new ApprovalDesk({ store, wake: (jobId) => wakeParkedJob(queue, jobId) });
    let reads = 0;
    let wokeByDesk: boolean | undefined;
    // The worker's store: the first read (recording) sees the call pending, and a person approves right then;
    // the read after the move to delayed fails, as a query does when MySQL drops a connection.
    const flaky = Object.create(store) as ApprovalStore;
    flaky.forCalls = async (jobId, instance, keys) => {
      reads++;
      if (reads === 1) {
        const rows = await store.forCalls(jobId, instance, keys);
        const decided = await desk.decide(rows[0]!.id, { decision: 'approve', by: 'ops' });
        wokeByDesk = decided.kind === 'decided';
        return rows;
      }
      throw Object.assign(new Error('Connection lost: The server closed the connection.'), {
        code: 'PROTOCOL_CONNECTION_LOST',
      });
    };
    const parking = new ApprovalParking(flaky, undefined);
    let runs = 0;
    worker = new Worker(
      'agent-tasks',
      async (job: Job, token?: string) => {
        runs++;
        if (runs > 1) return 'resumed';
        const jobId = String(job.id);
        await parking.park(
          job,
          token,
          {
            jobId,
            batchId: null,
            tenant: null,
            agent: 'default',
            instance: String(job.timestamp),
            awaiting: [
              {
                callKey: `${jobId}:1:1`,
                callId: 'c1',
                step: 1,
                tool: 'pay',
                arguments: { to: 'a' },
                requestedAt: Date.now(),
              },
            ],
            tools,
            timeoutMs: 3_600_000,
          },
          log,
        );
      },
      { connection, prefix: PREFIX },
    );
    worker.on('error', () => undefined);
    const job = await queue.add('t', { task: 'x' });
    const deadline = Date.now() + 10_000;
    while (reads < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 3_000));

    expect(wokeByDesk).toBe(true); // the decision was recorded
    expect((await store.forCalls(String(job.id), String(job.timestamp), [`${job.id}:1:1`]))[0]!.state).toBe(
      'approved',
    );
    // Decided, so it must run again soon, not an hour (a day by default) later.
    expect(await job.getState()).not.toBe('delayed');
    expect(runs).toBe(2);
  });
});
