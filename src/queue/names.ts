// Queue names are public: producers and result consumers use them (docs/fleet.md); the prefix (QUEUE_PREFIX) lets several
// fleets share one Redis.
export const TASKS_QUEUE = 'agent-tasks';
export const RESULTS_QUEUE = 'agent-results';
/** The name of every job on the results queue. */
export const RESULT_JOB_NAME = 'result';
/**
 * The name tasks' jobs had before they were named after their agent and first words (src/queue/task-job-name.ts):
 * still a valid name for a job added by hand, which workers process like any other.
 */
export const TASK_JOB_NAME = 'agent-task';

/** Parent jobs of batches: each completes when all its tasks have finished. */
export const BATCHES_QUEUE = 'agent-batches';
export const BATCH_JOB_NAME = 'agent-batch';
/** Fires the named schedules of config/schedules.json. */
export const SCHEDULES_QUEUE = 'agent-schedules';

/** What happens to approvals (`approval.requested`, `approval.decided`), for services that notify people. */
export const EVENTS_QUEUE = 'agent-events';

/** Every queue of the fleet, for the board. */
export const FLEET_QUEUES = [
  TASKS_QUEUE,
  RESULTS_QUEUE,
  BATCHES_QUEUE,
  SCHEDULES_QUEUE,
  EVENTS_QUEUE,
] as const;

/**
 * The id of a task's result job on agent-results. Derived from the task's id, so publishing twice is a
 * no-op; prefixed, because BullMQ refuses custom ids that look like integers (task ids do).
 */
export const resultJobId = (taskJobId: string): string => `result-${taskJobId}`;
