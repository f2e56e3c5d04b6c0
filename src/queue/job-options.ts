// How task jobs are enqueued: retries with exponential backoff for retryable failures (a model endpoint
// down, MySQL down). No retention here: the workers that finish the jobs apply the fleet's (retention.ts),
// so it is configured in one place and holds for jobs of every producer.
import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import { CAPPED_EXPONENTIAL } from './retry-schedule.js';

/**
 * Attempts of a job that keeps failing for infrastructure reasons (the model endpoint, a database or SMTP down).
 * With the worker's default waits (5 s doubling to at most 60 s: src/queue/retry-schedule.ts) the retries span
 * 375 s, so an outage of several minutes is ridden out.
 */
export const TASK_ATTEMPTS = 10;

export const TASK_JOB_OPTIONS: JobsOptions = {
  attempts: TASK_ATTEMPTS,
  backoff: { type: CAPPED_EXPONENTIAL },
};

/** A job id derived from an idempotency key: the same key enqueued twice names the same job. */
export function jobIdForKey(idempotencyKey: string): string {
  return `idem-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 32)}`;
}
