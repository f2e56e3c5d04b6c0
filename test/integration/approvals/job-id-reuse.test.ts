// A job id used again (an idempotency key enqueued again once its first job left Redis, as
// docs/http-api.md#idempotency allows) must not inherit the decisions made on the first job's calls: an
// approval's id derives from the call's key and the job's creation time, and parking supersedes what an earlier
// job of the id left waiting. The worker's cycle here is the processor's, with the real parking and store.
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApprovalDesk } from '../../../src/approvals/approval-desk.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { AgentResult, RunState } from '../../../src/kernel/types.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { ApprovalParking } from '../../../src/worker/approval-parking.js';
import { jobIdForKey } from '../../../src/queue/job-options.js';
import { runWith, type ToolLog } from '../../support/kernel-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_rt_reuse_${randomBytes(4).toString('hex')}`;
let pool: Pool;
let store: ApprovalStore;
let server: ScriptedModelServer;

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new ApprovalStore(pool);
});
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(async () => {
  await server?.close();
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

/** Enough of a BullMQ job for ApprovalParking: it records where the job was sent. */
function fakeJob(id: string, timestamp: number) {
  const moves: number[] = [];
  const job = {
    id,
    timestamp,
    progress: {},
    async updateProgress(progress: unknown) {
      job.progress = progress as object;
    },
    async moveToDelayed(at: number) {
      moves.push(at);
    },
    async promote() {},
  };
  return { job: job as unknown as Job, moves };
}

function payTools(log: ToolLog): ToolRegistry {
  return new ToolRegistry([
    defineTool({
      name: 'pay',
      description: 'Pay an amount to someone.',
      parameters: z.object({ to: z.string(), amount: z.number() }),
      needsApproval: true,
      async execute(args, ctx) {
        log.executions.push({ tool: 'pay', args, callKey: ctx.callKey });
        return `paid ${args.amount} to ${args.to}`;
      },
    }),
  ]);
}

/** The worker's cycle for one job: run, park (records approvals), read decisions, resume. */
async function runJob(
  jobId: string,
  createdAt: number,
  log: ToolLog,
  parking: ApprovalParking,
  checkpoint?: RunState,
): Promise<{ result: AgentResult; checkpoint: RunState; moves: number[] }> {
  const { job, moves } = fakeJob(jobId, createdAt);
  const decided = checkpoint ? await parking.decisionsFor(job, checkpoint) : undefined;
  const tools = payTools(log);
  const run = await runWith(server, {
    runId: jobId,
    tools,
    log,
    ...(checkpoint ? { checkpoint } : {}),
    approvals: { policy: 'none', ...(decided ? { decisions: decided.decisions } : {}) },
  });
  if (run.result.stopReason === 'awaiting_approval') {
    await parking
      .park(
        job,
        'token',
        {
          jobId,
          batchId: null,
          tenant: null,
          agent: 'default',
          instance: String(createdAt),
          awaiting: run.result.awaitingApproval!,
          tools,
          timeoutMs: 3_600_000,
        },
        { info() {}, warn() {}, debug() {}, error() {}, child: () => undefined } as never,
      )
      .catch((error: unknown) => {
        if ((error as Error).name !== 'DelayedError') throw error;
      });
  }
  return { result: run.result, checkpoint: run.checkpoints.at(-1)!, moves };
}

describe('a job id used again (an idempotency key enqueued again after retention)', () => {
  it("the new job's call is asked of a person, not decided by the old job's approval", async () => {
    const jobId = jobIdForKey(`invoice-${randomBytes(4).toString('hex')}`);
    const parking = new ApprovalParking(store, undefined);
    const desk = new ApprovalDesk({ store, wake: async () => true });

    // The first job: pays alice 10, a person approves it with the amount edited to 5, it completes.
    const first: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
    server.reset({
      script: [{ actions: [{ tool: 'pay', args: { to: 'alice', amount: 10 } }] }, { answer: 'paid' }],
    });
    const parked1 = await runJob(jobId, 1_000, first, parking);
    expect(parked1.result.stopReason).toBe('awaiting_approval');
    const [asked1] = await store.list({ jobId, state: 'pending' });
    const decided = await desk.decide(asked1!.id, {
      decision: 'approve',
      by: 'ops',
      arguments: { to: 'alice', amount: 5 },
    });
    expect(decided.kind).toBe('decided');
    const done1 = await runJob(jobId, 1_000, first, parking, parked1.checkpoint);
    expect(done1.result.stopReason).toBe('answer');
    expect(first.executions.map((e) => e.args)).toEqual([{ to: 'alice', amount: 5 }]);

    // Later, the job is gone from Redis and the same key is enqueued again: a new job of the same id, whose
    // model asks to pay mallory 9999 at the same step and position.
    const second: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
    server.reset({
      script: [{ actions: [{ tool: 'pay', args: { to: 'mallory', amount: 9999 } }] }, { answer: 'paid' }],
    });
    const parked2 = await runJob(jobId, 2_000, second, parking);
    expect(parked2.result.stopReason).toBe('awaiting_approval');
    const resumed2 = await runJob(jobId, 2_000, second, parking, parked2.checkpoint);

    // Nobody decided on this call: it must still wait, and nothing may have been paid.
    expect(second.executions).toEqual([]);
    expect(resumed2.result.stopReason).toBe('awaiting_approval');
    const pending = await store.list({ jobId, state: 'pending' });
    expect(pending.map((a) => a.arguments)).toEqual([{ to: 'mallory', amount: 9999 }]);
  });
});

describe('what an earlier job of the id left waiting', () => {
  it('is superseded when the new job parks: it no longer holds the new job back', async () => {
    const jobId = jobIdForKey(`refund-${randomBytes(4).toString('hex')}`);
    const parking = new ApprovalParking(store, undefined);
    const first: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
    server.reset({ script: [{ actions: [{ tool: 'pay', args: { to: 'bob', amount: 1 } }] }] });
    await runJob(jobId, 1_000, first, parking);
    // Gone from Redis undecided; the same key enqueued again parks a call of its own.
    const second: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
    server.reset({ script: [{ actions: [{ tool: 'pay', args: { to: 'carol', amount: 2 } }] }] });
    await runJob(jobId, 2_000, second, parking);
    const rows = await store.list({ jobId });
    expect(rows.map((a) => [a.arguments, a.state, a.reason]).sort()).toEqual(
      [
        [{ to: 'bob', amount: 1 }, 'expired', 'superseded'],
        [{ to: 'carol', amount: 2 }, 'pending', null],
      ].sort(),
    );
    expect(await store.pendingCount(jobId)).toBe(1);
  });
});
