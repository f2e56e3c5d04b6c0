// Bounded retries with backoff for the worker's own I/O (MySQL writes, publishing): a short outage is
// ridden out inside the job; a long one fails the attempt, and BullMQ's retry policy takes over.
import { sleep } from '../kernel/sleep.js';

export interface RetryOptions {
  attempts: number;
  baseDelayMs: number;
  onRetry?: (error: unknown, attempt: number) => void;
}

export async function withRetries<T>(work: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= options.attempts) throw error;
      options.onRetry?.(error, attempt);
      await sleep(options.baseDelayMs * 2 ** (attempt - 1));
    }
  }
}
