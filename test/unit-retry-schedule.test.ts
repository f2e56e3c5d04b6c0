// The waits after an infrastructure failure: exponential, capped, and long enough in all for outages of minutes.
import { describe, expect, it } from 'vitest';
import { parseEnv } from '../config/env.js';
import { TASK_ATTEMPTS, TASK_JOB_OPTIONS } from '../src/queue/job-options.js';
import { CAPPED_EXPONENTIAL, retryDelayMs, retryWindowMs } from '../src/queue/retry-schedule.js';
import { isConnectionFailure } from '../src/store/mysql-errors.js';

describe('retry schedule', () => {
  const env = parseEnv({});
  const schedule = { baseMs: env.WORKER_RETRY_BASE_MS, maxMs: env.WORKER_RETRY_MAX_MS };

  it('doubles from the base up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 40].map((n) => retryDelayMs(schedule, n))).toEqual([
      5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000,
    ]);
  });

  it("task jobs' attempts ride out more than five minutes with the default schedule", () => {
    expect(TASK_JOB_OPTIONS).toMatchObject({
      attempts: TASK_ATTEMPTS,
      backoff: { type: CAPPED_EXPONENTIAL },
    });
    expect(retryWindowMs(schedule, TASK_ATTEMPTS)).toBe(375_000);
  });

  it('is configured by WORKER_RETRY_BASE_MS and WORKER_RETRY_MAX_MS, a bad value named', () => {
    const short = parseEnv({ WORKER_RETRY_BASE_MS: '500', WORKER_RETRY_MAX_MS: '2000' });
    expect(retryWindowMs({ baseMs: short.WORKER_RETRY_BASE_MS, maxMs: short.WORKER_RETRY_MAX_MS }, 3)).toBe(
      1_500,
    );
    expect(() => parseEnv({ WORKER_RETRY_MAX_MS: 'soon' })).toThrow(/^WORKER_RETRY_MAX_MS="soon" is invalid/);
  });
});

describe('isConnectionFailure', () => {
  it('tells a lost or refused connection from a failed statement by its fields', () => {
    expect(isConnectionFailure({ code: 'ECONNREFUSED', fatal: true })).toBe(true);
    expect(isConnectionFailure({ code: 'PROTOCOL_CONNECTION_LOST', fatal: true })).toBe(true);
    expect(isConnectionFailure({ code: 'SOMETHING_NEW', fatal: true })).toBe(true);
    expect(isConnectionFailure({ code: 'ER_DATA_TOO_LONG', sqlState: '22001' })).toBe(false);
    expect(isConnectionFailure({ code: 'ER_PARSE_ERROR', fatal: true, sqlState: '42000' })).toBe(false);
    expect(isConnectionFailure(new Error('connection refused'))).toBe(false);
  });
});
