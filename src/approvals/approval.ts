// An approval as the store keeps it and the API, the CLI and the console show it (docs/approvals.md).
import { createHash } from 'node:crypto';

export const APPROVAL_STATES = ['pending', 'approved', 'rejected', 'expired'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

export interface Approval {
  id: string;
  jobId: string;
  batchId: string | null;
  tenant: string | null;
  agent: string | null;
  step: number;
  callId: string;
  callKey: string;
  tool: string;
  /** As the model gave them, accepted by the tool's schema (which applies its defaults when the call runs). */
  arguments: unknown;
  state: ApprovalState;
  /** ISO 8601. */
  requestedAt: string;
  expiresAt: string;
  /** The name of the credentials that decided (an API token's name, `console:<user>`, `shell:<user>`); null while pending or expired. */
  decidedBy: string | null;
  /** `approve` or `reject`; an expired call is `reject` with the reason `expired`. Null while pending. */
  decision: 'approve' | 'reject' | null;
  reason: string | null;
  /** The arguments the approver changed them to; null when approved as asked. */
  editedArguments: unknown;
  decidedAt: string | null;
}

/** What a worker records when a run parks: one per call that waits. */
export type NewApproval = Pick<
  Approval,
  'jobId' | 'batchId' | 'tenant' | 'agent' | 'step' | 'callId' | 'callKey' | 'tool' | 'arguments'
> & {
  /** The job's creation time (BullMQ's `timestamp`): with the call key, what the approval's id derives from. */
  instance: string;
  /** The tool's JSON Schema (what the model was shown), to check an edit against; null when it has none. */
  argumentsSchema: Record<string, unknown> | null;
  requestedAt: Date;
  expiresAt: Date;
};

/**
 * One id per call of one job, derived from the call's key and the job's creation time (`instance`): parking again
 * after a crash finds the same row, and a new job that reuses the id of an earlier one never does.
 */
export function approvalIdOf(callKey: string, instance: string): string {
  return `apr_${createHash('sha256').update(`${callKey}@${instance}`).digest('hex').slice(0, 32)}`;
}
