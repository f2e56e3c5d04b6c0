// How long finished jobs stay in Redis. Redis runs with `noeviction`, so anything kept without a bound fills it
// in the end; every queue of the fleet keeps its finished jobs by age and by count, whichever bites first.
// The workers apply it (they are the ones that finish jobs), so it holds whichever producer enqueued a job.

/** BullMQ's KeepJobs with both bounds: a job goes when it is older than `age` seconds or not among the newest `count`. */
export interface Keep {
  age: number;
  count: number;
}

export interface FleetRetention {
  /** agent-results jobs (consumed or not), and the batch parents on agent-batches that carry the summaries. */
  results: Keep;
  /** Completed task jobs on agent-tasks and completed schedule firings. */
  completed: Keep;
  /** Failed jobs of every queue (tasks, batch parents, schedule firings, results a consumer failed). */
  failed: Keep;
}

const DAY_S = 24 * 3600;

/**
 * Sized for a nightly fleet: a result stays a week, so Monday's consumer still finds Friday night's batch; a
 * completed task job only a day, since its result outlives it; a failed job a week, time enough to look at it
 * after a weekend. 10,000 of each is a few nights of large batches and, at a few KB per job, tens of MB of Redis.
 */
export const DEFAULT_RETENTION = {
  RESULTS_KEEP_AGE_S: 7 * DAY_S,
  RESULTS_KEEP_COUNT: 10_000,
  TASKS_KEEP_COMPLETED_AGE_S: DAY_S,
  TASKS_KEEP_COMPLETED_COUNT: 10_000,
  TASKS_KEEP_FAILED_AGE_S: 7 * DAY_S,
  TASKS_KEEP_FAILED_COUNT: 10_000,
} as const;

export type RetentionEnv = { [K in keyof typeof DEFAULT_RETENTION]: number };

export function retentionFrom(env: RetentionEnv = DEFAULT_RETENTION): FleetRetention {
  return {
    results: { age: env.RESULTS_KEEP_AGE_S, count: env.RESULTS_KEEP_COUNT },
    completed: { age: env.TASKS_KEEP_COMPLETED_AGE_S, count: env.TASKS_KEEP_COMPLETED_COUNT },
    failed: { age: env.TASKS_KEEP_FAILED_AGE_S, count: env.TASKS_KEEP_FAILED_COUNT },
  };
}
