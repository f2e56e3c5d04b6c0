// What happens to approvals, as jobs on agent-events for a service that tells people (a chat message, a mail):
// `approval.requested` when a call starts waiting, `approval.decided` when someone decides it. Each event's job id
// derives from its type and the approval's id, and BullMQ ignores an add whose id exists, so an event sent again
// (a worker that parks again, a retried decision) adds nothing while the first is still on the queue.
//
// Bounded, because Redis runs with noeviction: removeOnComplete / removeOnFail drop what a consumer processed
// (the newest 1,000, none older than a week); events nobody consumes stay waiting, where those options never
// look, so the publisher trims the waiting ones by the same bounds, at most once a minute.
import type { Queue } from 'bullmq';
import type { Keep } from '../queue/retention.js';
import type { Approval } from './approval.js';

export type ApprovalEventType = 'approval.requested' | 'approval.decided';

/** The data of an event's job. The decision's fields are null on `approval.requested`. */
export interface ApprovalEvent {
  type: ApprovalEventType;
  approvalId: string;
  jobId: string;
  batchId: string | null;
  tenant: string | null;
  agent: string | null;
  step: number;
  tool: string;
  arguments: unknown;
  requestedAt: string;
  expiresAt: string;
  state: Approval['state'];
  decision: Approval['decision'];
  decidedBy: string | null;
  reason: string | null;
  editedArguments: unknown;
  decidedAt: string | null;
}

export interface ApprovalEventsOptions {
  /** Default: the newest 1,000, none older than 7 days. */
  keep?: Keep;
  /** Waiting events are trimmed at most this often, after a publish. Default 60,000 ms. */
  trimEveryMs?: number;
}

export const DEFAULT_EVENTS_KEEP: Keep = { age: 7 * 24 * 3600, count: 1_000 };

/** The id of an event's job: one per type and approval (no `:`, which BullMQ refuses in custom ids). */
export const approvalEventJobId = (type: ApprovalEventType, approvalId: string): string =>
  `${type}-${approvalId}`;

export class ApprovalEvents {
  private readonly keep: Keep;
  private readonly trimEveryMs: number;
  private lastTrim = 0;

  /** `queue`: agent-events (EVENTS_QUEUE) under the fleet's prefix; the caller owns and closes it. */
  constructor(
    private readonly queue: Queue,
    options: ApprovalEventsOptions = {},
  ) {
    this.keep = options.keep ?? DEFAULT_EVENTS_KEEP;
    this.trimEveryMs = options.trimEveryMs ?? 60_000;
  }

  async requested(approval: Approval): Promise<void> {
    await this.publish('approval.requested', approval);
  }

  async decided(approval: Approval): Promise<void> {
    await this.publish('approval.decided', approval);
  }

  /** Removes waiting events beyond the kept count (oldest first) and older than the kept age. */
  async trim(): Promise<number> {
    let removed = 0;
    const excess = (await this.queue.getWaitingCount()) - this.keep.count;
    if (excess > 0) removed += (await this.queue.clean(0, excess, 'wait')).length;
    removed += (await this.queue.clean(this.keep.age * 1000, 1_000, 'wait')).length;
    return removed;
  }

  private async publish(type: ApprovalEventType, approval: Approval): Promise<void> {
    await this.queue.add(type, eventOf(type, approval), {
      jobId: approvalEventJobId(type, approval.id),
      removeOnComplete: this.keep,
      removeOnFail: this.keep,
    });
    if (Date.now() - this.lastTrim < this.trimEveryMs) return;
    this.lastTrim = Date.now();
    // The event is out: a failed trim only delays the bound to the next one.
    await this.trim().catch(() => undefined);
  }
}

function eventOf(type: ApprovalEventType, approval: Approval): ApprovalEvent {
  return {
    type,
    approvalId: approval.id,
    jobId: approval.jobId,
    batchId: approval.batchId,
    tenant: approval.tenant,
    agent: approval.agent,
    step: approval.step,
    tool: approval.tool,
    arguments: approval.arguments,
    requestedAt: approval.requestedAt,
    expiresAt: approval.expiresAt,
    state: approval.state,
    decision: approval.decision,
    decidedBy: approval.decidedBy,
    reason: approval.reason,
    editedArguments: approval.editedArguments,
    decidedAt: approval.decidedAt,
  };
}
