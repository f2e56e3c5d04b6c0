// Which batch a job belongs to: the one named by its `metadata.batch` only when the job really is a task of that
// batch, a child of the batch's parent job on agent-batches (enqueue-batch.ts). A job that merely names a batch
// (set by hand in Redis, or by an old producer) runs as an ordinary job: it is not charged to that batch's
// budget, nor counted in its report.
import type { Job } from 'bullmq';
import { BATCHES_QUEUE, TASKS_QUEUE } from '../queue/names.js';

export interface BatchMembership {
  /** The batch the job belongs to, if any. */
  batchId: string | undefined;
  /** The batch the job's metadata names without belonging to it, for a warning. */
  claimed: string | undefined;
}

export function batchMembership(job: Pick<Job, 'data' | 'parent'>, prefix: string): BatchMembership {
  const data = job.data as { metadata?: Record<string, unknown> } | undefined;
  const named = data?.metadata?.['batch'];
  if (typeof named !== 'string') return { batchId: undefined, claimed: undefined };
  const parent = job.parent;
  const member = parent?.id === named && parent.queueKey === `${prefix}:${BATCHES_QUEUE}`;
  return member ? { batchId: named, claimed: undefined } : { batchId: undefined, claimed: named };
}

/**
 * A task's `parent` (a child agent's task: its parent's job, depth and batch), honoured only when the job really
 * is a child of that job on the tasks queue (child-jobs.ts adds it so): a task that merely claims one, added by
 * hand in Redis, runs as a task of its own, neither charged to the claimed batch nor placed in its tree.
 */
export function parentMembership<T extends { parent?: { jobId: string } | undefined }>(
  job: Pick<Job, 'parent'>,
  task: T,
  prefix: string,
): { task: T; claimed: string | undefined } {
  if (task.parent === undefined) return { task, claimed: undefined };
  const member = job.parent?.id === task.parent.jobId && job.parent.queueKey === `${prefix}:${TASKS_QUEUE}`;
  if (member) return { task, claimed: undefined };
  const { parent, ...rest } = task;
  return { task: rest as T, claimed: parent.jobId };
}
