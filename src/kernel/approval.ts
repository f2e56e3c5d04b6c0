// Approvals as the kernel sees them: which calls wait for a person's decision, what the run asks, and the
// decisions it is resumed with. The kernel parks a run (stopReason `awaiting_approval`, state kept open) and
// never waits itself: where the decisions live and how a parked job waits is the worker's (docs/approvals.md).

/** `side-effects`: every call of a tool not marked read-only waits for a decision; `none` (default): only tools that ask. */
export type ApprovalPolicy = 'none' | 'side-effects';
export const APPROVAL_POLICIES = ['none', 'side-effects'] as const;

/** How long a call waits for a decision by default (APPROVAL_TIMEOUT_MS). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 3_600_000;
export const MIN_APPROVAL_TIMEOUT_MS = 1_000;
/** Six days: a parked run's checkpoint and traces are kept seven in Redis, and must outlast the wait. */
export const MAX_APPROVAL_TIMEOUT_MS = 6 * 24 * 3_600_000;

/** What a tool's `needsApproval` function is told about the call besides its arguments. */
export interface ApprovalContext {
  runId: string;
  step: number;
  /** The tool's name. */
  tool: string;
}

/** A tool's own rule: always, never, or a function of the arguments (as the tool would receive them) and the call. */
export type NeedsApproval<Args = unknown> =
  boolean | ((args: Args, ctx: ApprovalContext) => boolean | Promise<boolean>);

/** A call the run waits on: what a person is asked to approve. */
export interface ApprovalRequest {
  /** The call's stable key (`<runId>:<step>:<position>`): one approval per key. */
  callKey: string;
  /** The model's id of the call. */
  callId: string;
  step: number;
  tool: string;
  /**
   * The arguments as the model gave them, which the tool's schema accepted (its defaults and transforms are
   * applied when the call runs, to these or to an approver's edit of them).
   */
  arguments: unknown;
  /** When the run first asked (epoch ms). */
  requestedAt: number;
}

/** A decision on one call, as the run is resumed with it. */
export type ApprovalDecision =
  | {
      decision: 'approve';
      by: string;
      /** Edited arguments, checked again against the tool's schema. */ arguments?: unknown;
      decidedAt?: number;
    }
  | { decision: 'reject'; by: string; reason: string; decidedAt?: number }
  | { decision: 'expire'; decidedAt?: number };

/** What a run is given about approvals: the policy of its task, and decisions reached since it parked. */
export interface RunApprovals {
  policy?: ApprovalPolicy;
  /** By call key. A call that needs approval and has none here keeps waiting. */
  decisions?: Readonly<Record<string, ApprovalDecision>>;
}

/** What the model observes for a call that was not approved. */
export function notApprovedObservation(decision: Exclude<ApprovalDecision, { decision: 'approve' }>): string {
  if (decision.decision === 'expire')
    return 'rejected by timeout: expired (no decision was made in time; the call did not run)';
  return `rejected by ${decision.by}: ${decision.reason || 'no reason given'}`;
}
