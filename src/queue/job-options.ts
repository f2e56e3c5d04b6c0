// How task jobs are enqueued: retries with exponential backoff for retryable failures (a model endpoint
// down, MySQL down), and bounded retention so Redis does not grow without end.
import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';

export const TASK_ATTEMPTS = 3;

export const TASK_JOB_OPTIONS: JobsOptions = {
  attempts: TASK_ATTEMPTS,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 50_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
};

/** A job id derived from an idempotency key: the same key enqueued twice names the same job. */
export function jobIdForKey(idempotencyKey: string): string {
  return `idem-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 32)}`;
}
