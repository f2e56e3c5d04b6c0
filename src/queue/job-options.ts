// How task jobs are enqueued: retries with exponential backoff for retryable failures (a model endpoint
// down, MySQL down). No retention here: the workers that finish the jobs apply the fleet's (retention.ts),
// so it is configured in one place and holds for jobs of every producer.
import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';

export const TASK_ATTEMPTS = 3;

export const TASK_JOB_OPTIONS: JobsOptions = {
  attempts: TASK_ATTEMPTS,
  backoff: { type: 'exponential', delay: 5_000 },
};

/** A job id derived from an idempotency key: the same key enqueued twice names the same job. */
export function jobIdForKey(idempotencyKey: string): string {
  return `idem-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 32)}`;
}
