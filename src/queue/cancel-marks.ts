// A task's cancel mark (docs/cancelling.md): one Redis key per cancelled job, written by whoever cancels it and
// read by whichever worker takes the job next, so a cancel survives the job waiting, being parked or its worker
// restarting. A job running right now is told through the channel every worker subscribes to.
import type { RedisClient } from './redis.js';

/**
 * Kept as long as a job can still start again: a week, as its checkpoint (a run parked for approval waits at most
 * six days) and as a result is kept by default (RESULTS_KEEP_AGE_S).
 */
export const CANCEL_MARK_TTL_S = 7 * 24 * 3600;

export const cancelMarkKey = (prefix: string, jobId: string): string => `${prefix}:agent-cancel:${jobId}`;

/** The pub/sub channel a cancel is announced on: its message is the job id. */
export const cancelChannel = (prefix: string): string => `${prefix}:agent-cancels`;

export interface CancelMark {
  /** Who cancelled: a token's name (`api`), `shell:<user>`, or what a client said. */
  by: string;
  /** When, in ms since the epoch. */
  at: number;
  /**
   * The job's creation time (BullMQ's `timestamp`): a later job that reuses the id (an idempotency key enqueued
   * again) is not cancelled by a mark left for the one before it.
   */
  instance: string;
  /** Set on a child agent's job cancelled because its parent was: the parent's job id. */
  parent?: string;
}

/** The mark as stored, or null when the text is not one (a key written by something else). */
export function parseCancelMark(text: string | null): CancelMark | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as Partial<CancelMark> | null;
    if (typeof value?.by !== 'string' || typeof value.at !== 'number' || typeof value.instance !== 'string')
      return null;
    return {
      by: value.by,
      at: value.at,
      instance: value.instance,
      ...(typeof value.parent === 'string' ? { parent: value.parent } : {}),
    };
  } catch {
    return null;
  }
}

/** The mark of this instance of the job, or null (none, or one left for an earlier job of the same id). */
export async function readCancelMark(
  redis: RedisClient,
  prefix: string,
  jobId: string,
  instance: string,
): Promise<CancelMark | null> {
  const mark = parseCancelMark(await redis.get(cancelMarkKey(prefix, jobId)));
  return mark?.instance === instance ? mark : null;
}

/**
 * The mark a job honours: its own, else (a child agent's job) its parent's, when that is the mark of the parent
 * job that exists now. A child started just after its parent was cancelled, before the canceller reached it, is
 * then cancelled all the same.
 */
export function honouredMark(
  own: { text: string | null; instance: string },
  parent?: { jobId: string; text: string | null; instance: string | null },
): CancelMark | null {
  const mark = parseCancelMark(own.text);
  if (mark?.instance === own.instance) return mark;
  const parentMark = parent ? parseCancelMark(parent.text) : null;
  if (!parent || !parentMark || parentMark.instance !== parent.instance) return null;
  return { by: parentMark.by, at: parentMark.at, instance: own.instance, parent: parent.jobId };
}

/**
 * Records the mark unless this instance has one (the first cancel says who), then announces it. A mark of an
 * earlier job of the same id is replaced.
 */
export async function writeCancelMark(
  redis: RedisClient,
  prefix: string,
  jobId: string,
  mark: CancelMark,
): Promise<CancelMark> {
  const key = cancelMarkKey(prefix, jobId);
  const existing = parseCancelMark(await redis.get(key));
  const kept = existing?.instance === mark.instance ? existing : mark;
  if (kept === mark) await redis.set(key, JSON.stringify(mark), 'EX', CANCEL_MARK_TTL_S);
  await redis.publish(cancelChannel(prefix), jobId);
  return kept;
}

/** The text a cancelled result carries in `stopDetail` (and agent_runs.stop_detail). */
export function cancelDetail(mark: CancelMark): string {
  const via = mark.parent ? ` (its parent job ${mark.parent} was cancelled)` : '';
  return `cancelled by ${mark.by} at ${new Date(mark.at).toISOString()}${via}`;
}
