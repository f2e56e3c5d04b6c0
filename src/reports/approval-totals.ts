// The batch report's approvals: how many of the batch's calls waited for a person and how each wait ended
// (pending, approved, rejected, expired), and one row per call, in task order, with no I/O. The rows keep what a
// reader of the report asks (who decided, when, why, whether the arguments were changed), never the arguments:
// those stay in agent_approvals, shown by `npm run approvals -- show ID` and the run console.
import { APPROVAL_STATES, type Approval, type ApprovalState } from '../approvals/approval.js';

/** Rows the report lists at most: a report is read by a person, and must fit batch_reports' MEDIUMTEXT. */
export const APPROVAL_ROWS_MAX = 500;

export interface ApprovalReportRow {
  /** The task's 1-based position in the batch; null for a call of a job the batch does not list. */
  index: number | null;
  jobId: string;
  tool: string;
  state: ApprovalState;
  requestedAt: Date;
  /** Null while pending, and for an expired call (nobody decided). */
  decidedBy: string | null;
  decidedAt: Date | null;
  reason: string | null;
  /** Approved with arguments the approver changed. */
  edited: boolean;
}

export interface ApprovalsReport {
  /** Every call of the batch that waited, by its state now. */
  counts: Record<ApprovalState, number>;
  total: number;
  /** At most APPROVAL_ROWS_MAX, by task, then by request time. */
  rows: ApprovalReportRow[];
  /** Calls counted but not listed (past APPROVAL_ROWS_MAX). */
  omitted: number;
}

export function approvalTotals(
  approvals: readonly Approval[],
  position: ReadonlyMap<string, number>,
): ApprovalsReport {
  const counts = Object.fromEntries(APPROVAL_STATES.map((state) => [state, 0])) as Record<
    ApprovalState,
    number
  >;
  for (const approval of approvals) counts[approval.state]++;
  const rows = approvals.map((approval) => rowOf(approval, position.get(approval.jobId) ?? null));
  rows.sort(
    (a, b) =>
      (a.index ?? Number.MAX_SAFE_INTEGER) - (b.index ?? Number.MAX_SAFE_INTEGER) ||
      a.jobId.localeCompare(b.jobId) ||
      a.requestedAt.getTime() - b.requestedAt.getTime(),
  );
  return {
    counts,
    total: approvals.length,
    rows: rows.slice(0, APPROVAL_ROWS_MAX),
    omitted: Math.max(0, rows.length - APPROVAL_ROWS_MAX),
  };
}

function rowOf(approval: Approval, index: number | null): ApprovalReportRow {
  return {
    index,
    jobId: approval.jobId,
    tool: approval.tool,
    state: approval.state,
    requestedAt: new Date(approval.requestedAt),
    decidedBy: approval.decidedBy,
    decidedAt: approval.decidedAt === null ? null : new Date(approval.decidedAt),
    reason: approval.reason,
    edited: approval.editedArguments !== null && approval.editedArguments !== undefined,
  };
}
