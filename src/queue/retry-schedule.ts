// How long a job waits before it is tried again after an infrastructure failure: exponential from a base,
// capped, so that a long outage is polled at a steady pace instead of with ever longer gaps. The same schedule
// spaces BullMQ's retries of an attempt (the `capped-exponential` backoff of task jobs) and the redeliveries of a
// finished job whose record waits for MySQL.

/** The backoff type task jobs are enqueued with; the worker computes its delays (fleet-worker.ts). */
export const CAPPED_EXPONENTIAL = 'capped-exponential';

export interface RetrySchedule {
  /** WORKER_RETRY_BASE_MS: the first wait. */
  baseMs: number;
  /** WORKER_RETRY_MAX_MS: no wait is longer. */
  maxMs: number;
}

/** The wait before retry number `retry` (from 1): base · 2^(retry−1), at most max. */
export function retryDelayMs(schedule: RetrySchedule, retry: number): number {
  const exponent = Math.min(Math.max(retry, 1) - 1, 30);
  return Math.min(schedule.baseMs * 2 ** exponent, schedule.maxMs);
}

/** How long `attempts` attempts keep retrying, waits only: the longest outage they ride out. */
export function retryWindowMs(schedule: RetrySchedule, attempts: number): number {
  let total = 0;
  for (let retry = 1; retry < attempts; retry++) total += retryDelayMs(schedule, retry);
  return total;
}
