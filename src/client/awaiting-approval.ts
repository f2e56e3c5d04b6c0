// How a job parked for a person's decision looks from outside: BullMQ holds it `delayed` (no worker slot), and its
// progress says `status: "awaiting_approval"` with the calls that wait (docs/approvals.md). The client reports such
// a job's state as `awaiting_approval`, and the CLI's --wait says which calls to decide.

/** A call the job waits on, as its progress lists it. */
export interface PendingApprovalCall {
  id: string;
  tool: string;
  arguments: unknown;
  /** ISO 8601. */
  expiresAt: string;
}

export const AWAITING_APPROVAL = 'awaiting_approval';

/** The calls a parked job waits on, or null when its progress is not that of a parked job. */
export function pendingApprovalsOf(progress: unknown): PendingApprovalCall[] | null {
  if (typeof progress !== 'object' || progress === null) return null;
  const fields = progress as Record<string, unknown>;
  if (fields['status'] !== AWAITING_APPROVAL) return null;
  const calls = Array.isArray(fields['approvals']) ? (fields['approvals'] as unknown[]) : [];
  return calls.flatMap((call) => {
    if (typeof call !== 'object' || call === null) return [];
    const { id, tool, arguments: args, expiresAt } = call as Record<string, unknown>;
    if (typeof id !== 'string' || typeof tool !== 'string') return [];
    return [{ id, tool, arguments: args, expiresAt: typeof expiresAt === 'string' ? expiresAt : '' }];
  });
}

/** A job waits for approval while BullMQ delays it and its progress says so; any other delay is a retry's. */
export function isAwaitingApproval(state: string, progress: unknown): boolean {
  return state === 'delayed' && pendingApprovalsOf(progress) !== null;
}
