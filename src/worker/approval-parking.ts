// The worker's half of approvals: a run that stops with calls awaiting a decision is parked, and a parked run is
// resumed with the decisions reached since. Parking records one approval per call (idempotent: a run that parks
// again finds its rows), tells agent-events, shows `awaiting_approval` in the job's progress, and moves the job
// to BullMQ's `delayed` state until its first expiry: no worker slot, lock, tenant slot or spend reservation is
// held while a person decides, a decision wakes it at once (`promote`), and an expiry wakes it by itself.
// Design: docs/approvals.md.
import { DelayedError, type Job } from 'bullmq';
import type { ApprovalDecision, ApprovalRequest } from '../kernel/approval.js';
import { toolParametersJsonSchema, type ToolRegistry } from '../kernel/tool-registry.js';
import type { RunState } from '../kernel/types.js';
import { approvalIdOf, type Approval, type NewApproval } from '../approvals/approval.js';
import type { ApprovalEvents } from '../approvals/approval-events.js';
import type { ApprovalStore } from '../approvals/approval-store.js';
import { callKeyOf } from '../kernel/turn-approvals.js';
import type { Logger } from '../logging/logger.js';

/** What the job's progress shows while it waits (Bull Board, `GET /v1/tasks/:id`, the CLI's `--wait`). */
export const AWAITING_APPROVAL = 'awaiting_approval';
const STATUS = 'status';

/** The job a run belongs to, as its approvals record it. */
export interface ParkedJobInfo {
  jobId: string;
  batchId: string | null;
  tenant: string | null;
  agent: string | null;
}

export interface ParkRequest extends ParkedJobInfo {
  /**
   * The job's creation time: a job that reuses an id (an idempotency key enqueued again after retention) has
   * approvals of its own, never the decisions made for the job before it.
   */
  instance: string;
  awaiting: readonly ApprovalRequest[];
  tools: ToolRegistry;
  timeoutMs: number;
}

/** When the store cannot take a parking, the job comes back after this long (no attempt spent). */
const STORE_RETRY_MS = 5_000;

export class ApprovalParking {
  constructor(
    private readonly store: ApprovalStore,
    private readonly events: ApprovalEvents | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The decisions for a checkpoint's calls that wait, expiring first those past their time; undefined when the
   * checkpoint waits on nothing (no store read).
   */
  async decisionsFor(
    job: Job,
    checkpoint: RunState | null,
  ): Promise<{ decisions: Record<string, ApprovalDecision>; decided: Approval[] } | undefined> {
    const jobId = String(job.id);
    const keys = waitingKeys(checkpoint);
    if (keys.length === 0) return undefined;
    await this.tellDecided(await this.store.expireDue(new Date(this.now()), jobId));
    const instance = String(job.timestamp);
    const decided = (await this.store.forCalls(jobId, instance, keys)).filter((a) => a.state !== 'pending');
    const decisions: Record<string, ApprovalDecision> = {};
    for (const approval of decided) decisions[approval.callKey] = decisionOf(approval);
    return { decisions, decided };
  }

  /** Parks the job until its calls are decided or the first expires. Never returns: BullMQ is told with DelayedError. */
  async park(job: Job, token: string | undefined, request: ParkRequest, log: Logger): Promise<never> {
    let approvals: Approval[];
    try {
      approvals = await this.record(request, log);
    } catch (err) {
      // Nothing is lost: the checkpoint holds the turn, and the next delivery parks again.
      log.warn({ err, retryInMs: STORE_RETRY_MS }, 'approvals could not be recorded: parking again later');
      await job.moveToDelayed(this.now() + STORE_RETRY_MS, token);
      throw new DelayedError();
    }
    const waiting = approvals.filter((a) => a.state === 'pending');
    if (waiting.length > 0) {
      await job.updateProgress(awaitingProgress(job.progress, waiting));
      const wakeAt = Math.min(...waiting.map((a) => Date.parse(a.expiresAt)));
      await job.moveToDelayed(Math.max(wakeAt, this.now() + 1), token);
      log.info(
        { approvals: waiting.map((a) => a.id), tools: waiting.map((a) => a.tool) },
        'awaiting approval',
      );
      // A decision made before the job was delayed found nothing to wake: look once more now that it is. If the
      // look fails, wake it anyway: a job woken with nothing decided parks again, one left asleep waits a day.
      const decidedMeanwhile = await this.store
        .forCalls(request.jobId, request.instance, keysOf(request))
        .then((now) => now.every((a) => a.state !== 'pending'))
        .catch(() => true);
      if (decidedMeanwhile) await job.promote().catch(() => undefined);
    } else {
      // Every call was decided (or expired) while the run parked: back to the queue at once.
      await job.moveToDelayed(this.now() + 1, token);
    }
    throw new DelayedError();
  }

  /**
   * A cancelled job's calls that still wait become `expired` with the reason `cancelled`: no one is asked to
   * decide for a run that is over. Answers how many.
   */
  async withdraw(jobId: string): Promise<number> {
    const withdrawn = await this.store.supersede(jobId, [], new Date(this.now()), 'cancelled');
    await this.tellDecided(withdrawn);
    return withdrawn.length;
  }

  /**
   * Calls that expired, were superseded or withdrawn are decided by nobody: agent-events is told, as of a
   * person's decision, so a service that asked someone can stop waiting for them. A lost event is not worth
   * failing the run over: the approval itself is recorded.
   */
  private async tellDecided(approvals: readonly Approval[]): Promise<void> {
    for (const approval of approvals) await this.events?.decided(approval).catch(() => undefined);
  }

  /** Records the calls (once each), and tells agent-events of those new now. */
  private async record(request: ParkRequest, log: Logger): Promise<Approval[]> {
    const rows = request.awaiting.map((call): NewApproval => {
      const tool = request.tools.get(call.tool);
      return {
        jobId: request.jobId,
        batchId: request.batchId,
        tenant: request.tenant,
        agent: request.agent,
        step: call.step,
        callId: call.callId,
        callKey: call.callKey,
        instance: request.instance,
        tool: call.tool,
        arguments: call.arguments,
        argumentsSchema: tool ? toolParametersJsonSchema(tool) : null,
        requestedAt: new Date(call.requestedAt),
        expiresAt: new Date(call.requestedAt + request.timeoutMs),
      };
    });
    const { inserted } = await this.store.request(rows);
    // Calls an earlier job of the same id left waiting (an id used again) are not this job's to wait on.
    const ids = rows.map((row) => approvalIdOf(row.callKey, row.instance));
    await this.tellDecided(await this.store.supersede(request.jobId, ids, new Date(this.now())));
    await this.tellDecided(await this.store.expireDue(new Date(this.now()), request.jobId));
    const approvals = await this.store.forCalls(request.jobId, request.instance, keysOf(request));
    const fresh = new Set(inserted);
    for (const approval of approvals.filter((a) => fresh.has(a.id))) {
      // An event lost to a Redis blip is not worth failing the parking over: the approval itself is recorded.
      await this.events
        ?.requested(approval)
        .catch((err: unknown) => log.warn({ err, approval: approval.id }, 'approval event not sent'));
    }
    return approvals;
  }
}

/**
 * A job taken by a worker no longer waits for a person: its progress stops saying so, before anything may delay it
 * again for another reason (its tenant's slots), which must not read as `awaiting_approval`. A job that still
 * waits says so again when it parks. One write, for a job woken from parking only.
 */
export async function clearAwaitingStatus(job: Job): Promise<void> {
  const progress = job.progress;
  if (typeof progress !== 'object' || progress === null || !(STATUS in progress)) return;
  const { [STATUS]: _status, approvals: _approvals, ...rest } = progress as Record<string, unknown>;
  await job.updateProgress(rest);
}

const keysOf = (request: ParkRequest): string[] => request.awaiting.map((a) => a.callKey);

/** The keys of a checkpoint's calls that wait for a decision not yet applied. */
function waitingKeys(state: RunState | null): string[] {
  const pending = state?.pending;
  if (!state || !pending?.approvals) return [];
  const keys: string[] = [];
  pending.approvals.forEach((slot, i) => {
    if (slot && !slot.decision && !pending.results[i]) keys.push(callKeyOf(state.runId, state.steps, i));
  });
  return keys;
}

/** A recorded decision as the kernel takes it. */
function decisionOf(approval: Approval): ApprovalDecision {
  const decidedAt = approval.decidedAt ? Date.parse(approval.decidedAt) : undefined;
  const at = decidedAt === undefined ? {} : { decidedAt };
  if (approval.state === 'expired') return { decision: 'expire', ...at };
  const by = approval.decidedBy ?? 'unknown';
  if (approval.state === 'rejected') return { decision: 'reject', by, reason: approval.reason ?? '', ...at };
  return {
    decision: 'approve',
    by,
    ...(approval.editedArguments !== null && approval.editedArguments !== undefined
      ? { arguments: approval.editedArguments }
      : {}),
    ...at,
  };
}

/** The job's last progress (its step totals), marked as waiting, with what it waits on. */
function awaitingProgress(previous: unknown, waiting: readonly Approval[]): Record<string, unknown> {
  const base = typeof previous === 'object' && previous !== null ? (previous as Record<string, unknown>) : {};
  return {
    ...base,
    [STATUS]: AWAITING_APPROVAL,
    approvals: waiting.map((a) => ({
      id: a.id,
      tool: a.tool,
      arguments: a.arguments,
      requestedAt: a.requestedAt,
      expiresAt: a.expiresAt,
    })),
  };
}
