// Cancelling a task job and the child agents it started (docs/cancelling.md). The mark is written first, then the
// job's state is read: whatever the job does meanwhile, either this read sees it parked (and wakes it) or the
// worker parking it sees the mark (and wakes it itself, task-cancel.ts). Used by the client (a producer's cancel)
// and by a worker (a job that parked just as it was cancelled).
import type { Job, JobState } from 'bullmq';
import type { RedisClient } from './redis.js';
import { TASKS_QUEUE } from './names.js';
import { writeCancelMark, type CancelMark } from './cancel-marks.js';

/** bullmq's ErrorCode.JobNotExist and JobNotInState: the job went, or left the state the call needs. */
const MOVED_ON: ReadonlySet<unknown> = new Set([-1, -3]);

export interface CancelPorts {
  redis: RedisClient;
  prefix: string;
  getJob(jobId: string): Promise<Job | undefined>;
}

/** What was found: the job's state as the cancel met it, and how many jobs of its tree were marked besides it. */
export interface TreeCancel {
  state: JobState | 'unknown';
  children: number;
}

const FINISHED: ReadonlySet<string> = new Set(['completed', 'failed']);

/**
 * Marks the job and every unfinished child of it (recursively), announcing each to the workers, and hurries each
 * to a worker: a parked one is woken, a waiting one is put at the head of the queue. A finished job is left as it
 * is. A job never runs a model call after a worker has seen its mark.
 */
export async function cancelJobTree(
  ports: CancelPorts,
  job: Job,
  by: Pick<CancelMark, 'by' | 'at' | 'parent'>,
): Promise<TreeCancel> {
  const jobId = String(job.id);
  const before = await job.getState();
  if (FINISHED.has(before)) return { state: before, children: 0 };
  await writeCancelMark(ports.redis, ports.prefix, jobId, { ...by, instance: String(job.timestamp) });
  const state = await job.getState();
  await hurry(job, state);
  let children = 0;
  // A parent waiting for its children, or running and about to start them: every child still unfinished.
  for (const childId of await unfinishedChildren(job, ports.prefix)) {
    const child = await ports.getJob(childId);
    if (!child) continue;
    const tree = await cancelJobTree(ports, child, { by: by.by, at: by.at, parent: jobId });
    if (!FINISHED.has(tree.state)) children += 1 + tree.children;
  }
  return { state: before, children };
}

/** A delayed job is woken now; a waiting one goes first (its cancelled result then comes with the next free slot). */
async function hurry(job: Job, state: JobState | 'unknown'): Promise<void> {
  try {
    if (state === 'delayed') await job.promote();
    else if (state === 'waiting' || state === 'prioritized') await job.changePriority({ lifo: true });
  } catch (error) {
    // It moved on by itself meanwhile (woke, was taken): a worker sees the mark when it takes it.
    if (!MOVED_ON.has((error as { code?: unknown }).code)) throw error;
  }
}

/** The ids of the job's children on the tasks queue that have not finished. */
async function unfinishedChildren(job: Job, prefix: string): Promise<string[]> {
  const { unprocessed } = await job.getDependencies();
  const head = `${prefix}:${TASKS_QUEUE}:`;
  return (unprocessed ?? []).filter((key) => key.startsWith(head)).map((key) => key.slice(head.length));
}
