// The processor's half of cancelling (docs/cancelling.md). A job whose cancel mark a worker finds when it takes it
// runs the kernel with a signal already aborted: no model call, no tool call, but the same result a cancel
// mid-run gets (what the run spent, its children's outcomes and usage included). A cancelled result is final: it
// is recorded and published like any other, says who cancelled in `stopDetail`, and the job's calls still waiting
// for a person are withdrawn.
import { Queue, type Job } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import type { AgentResult } from '../kernel/types.js';
import type { Logger } from '../logging/logger.js';
import {
  cancelDetail,
  cancelMarkKey,
  honouredMark,
  readCancelMark,
  type CancelMark,
} from '../queue/cancel-marks.js';
import { cancelJobTree } from '../queue/cancel-task.js';
import { TASKS_QUEUE } from '../queue/names.js';
import type { ApprovalParking } from './approval-parking.js';
import { CANCEL_REASON } from './cancel-watch.js';

export interface CancelDeps {
  redis: RedisClient;
  env: { QUEUE_PREFIX: string };
  approvals?: Pick<ApprovalParking, 'withdraw'>;
}

/**
 * The job's cancel mark, if this instance of it has one; for a child agent's job, else its parent's (one round
 * trip: the two marks and the parent's creation time, which tells its mark from one left for an earlier job).
 */
export async function cancelMarkOf(
  deps: CancelDeps,
  job: Job,
  parentJobId?: string,
): Promise<CancelMark | null> {
  const prefix = deps.env.QUEUE_PREFIX;
  const instance = String(job.timestamp);
  if (parentJobId === undefined) return readCancelMark(deps.redis, prefix, String(job.id), instance);
  const replies = await deps.redis
    .pipeline()
    .get(cancelMarkKey(prefix, String(job.id)))
    .get(cancelMarkKey(prefix, parentJobId))
    .hget(`${prefix}:${TASKS_QUEUE}:${parentJobId}`, 'timestamp')
    .exec();
  const [own, parent, parentInstance] = (replies ?? []).map(([err, value]) => {
    if (err) throw err;
    return typeof value === 'string' ? value : null;
  });
  return honouredMark(
    { text: own ?? null, instance },
    { jobId: parentJobId, text: parent ?? null, instance: parentInstance ?? null },
  );
}

/** The signal of a run cancelled before it starts. */
export const cancelledSignal = (): AbortSignal => AbortSignal.abort(CANCEL_REASON);

/** Whether a run's signal was aborted by a cancel (not by the worker shutting down). */
export const isCancelAbort = (signal: AbortSignal | undefined): boolean =>
  signal?.aborted === true && signal.reason === CANCEL_REASON;

const PARKED = new Set(['awaiting_approval', 'awaiting_children']);

/**
 * The result of a run its cancel reached, as the job ends with it: `cancelled` with who cancelled, also when the
 * run parked just as the cancel came (it must not wait for a person or start children). A run that ended by
 * itself first (answered, failed) keeps its result. Pending approvals are withdrawn.
 */
export async function endAsCancelled(
  deps: CancelDeps,
  job: Job,
  result: AgentResult,
  signal: AbortSignal | undefined,
  mark: CancelMark | null,
  log: Logger,
): Promise<AgentResult> {
  if (!isCancelAbort(signal) || !(result.stopReason === 'cancelled' || PARKED.has(result.stopReason)))
    return result;
  const { awaitingApproval: _approvals, awaitingChildren: _children, ...rest } = result;
  const by = mark ?? (await cancelMarkOf(deps, job).catch(() => null));
  const cancelled: AgentResult = {
    ...rest,
    status: 'stopped',
    stopReason: 'cancelled',
    ...(by ? { stopDetail: cancelDetail(by) } : {}),
  };
  const withdrawn = await deps.approvals?.withdraw(String(job.id)).catch((err: unknown) => {
    log.warn({ err }, 'approvals of a cancelled job not withdrawn: they expire in their time');
    return 0;
  });
  log.info({ by: by?.by, steps: result.steps, withdrawn }, 'cancelled');
  return cancelled;
}

/**
 * After a run parked (for approval, or for its children) while its cancel was being recorded: the canceller may
 * have found the job still active, so the worker looks for the mark once more now that the job is parked, and
 * wakes it (and cancels its children) itself.
 */
export async function wakeIfCancelled(deps: CancelDeps, job: Job, log: Logger): Promise<void> {
  let tasks: Queue | undefined;
  try {
    const mark = await cancelMarkOf(deps, job);
    if (!mark) return;
    // Rare (a cancel racing a park): a queue made for it, on the worker's connection, to find the children.
    const prefix = deps.env.QUEUE_PREFIX;
    tasks = new Queue(TASKS_QUEUE, { connection: deps.redis, prefix });
    const ports = { redis: deps.redis, prefix, getJob: (id: string) => tasks!.getJob(id) };
    const { instance: _instance, ...by } = mark;
    await cancelJobTree(ports, job, by);
    log.info({ by: mark.by }, 'cancelled while parking: woken');
  } catch (err) {
    // The mark stays: the job ends cancelled when it wakes by itself (a decision, an expiry, its children).
    log.warn({ err }, 'a cancelled job parked: not woken now');
  } finally {
    await tasks?.close().catch(() => undefined);
  }
}
