// Jobs parked for approvals without a worker or a model, for the API's tests: a real job on agent-tasks held
// `delayed` with the progress a parked run sets ({ status: "awaiting_approval", approvals: […] }), and its calls
// asked in the store as a worker asks them.
import type { Queue } from 'bullmq';
import type { Approval } from '../../src/approvals/approval.js';
import type { ApprovalStore } from '../../src/approvals/approval-store.js';

/** send_email's arguments as the model is shown them: an edit is checked against this. */
export const EMAIL_ARGUMENTS_SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
  required: ['to', 'subject', 'body'],
  additionalProperties: false,
};

export interface ParkedCall {
  tool?: string;
  arguments?: Record<string, unknown>;
}

export interface ParkedJob {
  jobId: string;
  approvals: Approval[];
}

const DAY_MS = 86_400_000;

/** A task job delayed a day, with one approval per call (send_email by default), as a run parks at step 2. */
export async function parkJob(
  tasks: Queue,
  store: ApprovalStore,
  calls: readonly ParkedCall[],
  batchId: string | null = null,
): Promise<ParkedJob> {
  const job = await tasks.add('parked', { task: 'Email the top customers' }, { delay: DAY_MS });
  const jobId = String(job.id);
  const requestedAt = new Date();
  const expiresAt = new Date(requestedAt.getTime() + DAY_MS);
  const rows = calls.map((call, position) => ({
    jobId,
    batchId,
    tenant: null,
    agent: 'default',
    step: 2,
    callId: `call_${position}`,
    callKey: `${jobId}:2:${position}`,
    instance: '1',
    tool: call.tool ?? 'send_email',
    arguments: call.arguments ?? { to: `c${position}@example.com`, subject: 'Thanks', body: 'Thank you.' },
    argumentsSchema: (call.tool ?? 'send_email') === 'send_email' ? EMAIL_ARGUMENTS_SCHEMA : null,
    requestedAt,
    expiresAt,
  }));
  await store.request(rows);
  const approvals = await store.forCalls(
    jobId,
    '1',
    rows.map((row) => row.callKey),
  );
  await job.updateProgress({
    status: 'awaiting_approval',
    approvals: approvals.map(({ id, tool, arguments: args, expiresAt: expires }) => ({
      id,
      tool,
      arguments: args,
      expiresAt: expires,
    })),
    step: 2,
    maxSteps: 8,
    totalTokens: 1_200,
    costUsd: 0.004,
    toolCalls: 1,
  });
  return { jobId, approvals };
}
