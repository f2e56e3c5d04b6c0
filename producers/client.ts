// The typed client library: the same validated enqueue the CLI and the HTTP API use, for other TypeScript
// services to import. It never talks to a worker, only to Redis.
import { Queue, type Job, type JobState } from 'bullmq';
import type { Redis } from 'ioredis';
import { InputError } from '../src/agent/errors.js';
import type { AgentResult } from '../src/agent/types.js';
import { jobIdForKey, TASK_JOB_OPTIONS } from '../src/queue/job-options.js';
import { RESULTS_QUEUE, resultJobId, TASK_JOB_NAME, TASKS_QUEUE } from '../src/queue/names.js';
import { assertRedisReachable, createRedis } from '../src/queue/redis.js';
import {
  formatFieldIssues,
  validateTask,
  type AgentTask,
  type FieldIssue,
} from '../src/queue/task-schema.js';
import { sleep } from '../src/agent/sleep.js';

export type { AgentTask, AgentResult, FieldIssue };

/** A task that breaks its schema; `issues` name each bad field. Nothing was enqueued. */
export class TaskValidationError extends InputError {
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[], where = '') {
    super('invalid_task', `Invalid task${where}: ${formatFieldIssues(issues)}`);
    this.issues = issues;
  }
}

export interface FleetClientOptions {
  /** Default: REDIS_URL's default, redis://127.0.0.1:6379. */
  redisUrl?: string;
  /** Default: agentfleet. */
  prefix?: string;
}

export interface TaskStatus {
  state: JobState | 'unknown';
  progress: unknown;
  result: AgentResult | null;
}

export interface WaitOptions {
  /** Give up after this long (ms). Default: no limit. */
  timeoutMs?: number;
  /** Called whenever the job's progress changes. */
  onProgress?: (progress: unknown) => void;
  pollMs?: number;
}

export class FleetClient {
  private readonly redis: Redis;
  private readonly tasks: Queue;
  private readonly results: Queue;
  private readonly redisUrl: string;
  private ready: Promise<void> | undefined;

  constructor(options: FleetClientOptions = {}) {
    this.redisUrl = options.redisUrl ?? 'redis://127.0.0.1:6379';
    this.redis = createRedis(this.redisUrl, 'producer');
    // Quiet the connection's own error events: every failing command rejects with the error instead.
    this.redis.on('error', () => undefined);
    const prefix = options.prefix ?? 'agentfleet';
    this.tasks = new Queue(TASKS_QUEUE, { connection: this.redis, prefix });
    this.results = new Queue(RESULTS_QUEUE, { connection: this.redis, prefix });
    // Connection errors surface as rejected calls; without listeners BullMQ would also print them raw.
    this.tasks.on('error', () => undefined);
    this.results.on('error', () => undefined);
  }

  /** Validates and enqueues one task. Throws TaskValidationError (nothing enqueued) on a bad task. */
  async enqueue(input: unknown): Promise<{ jobId: string }> {
    const [result] = await this.enqueueMany([input]);
    return result!;
  }

  /** Validates every task first; enqueues only when all are valid. */
  async enqueueMany(inputs: readonly unknown[]): Promise<{ jobId: string }[]> {
    const tasks = inputs.map((input, i) => {
      const validation = validateTask(input);
      if (!validation.ok)
        throw new TaskValidationError(validation.issues, inputs.length > 1 ? ` #${i + 1}` : '');
      return validation.task;
    });
    await this.connected();
    const jobs = await this.tasks.addBulk(
      tasks.map((task) => ({
        name: TASK_JOB_NAME,
        data: task,
        opts: {
          ...TASK_JOB_OPTIONS,
          ...(task.idempotencyKey ? { jobId: jobIdForKey(task.idempotencyKey) } : {}),
        },
      })),
    );
    return jobs.map((job) => ({ jobId: String(job.id) }));
  }

  async getTask(jobId: string): Promise<TaskStatus> {
    await this.connected();
    const [job, result] = await Promise.all([this.tasks.getJob(jobId), this.getResult(jobId)]);
    if (!job) return { state: result ? 'completed' : 'unknown', progress: null, result };
    return { state: await job.getState(), progress: job.progress ?? null, result };
  }

  /** The published result (CONTRACT §4), or null while the job has not finished. */
  async getResult(jobId: string): Promise<AgentResult | null> {
    await this.connected();
    const job: Job | undefined = await this.results.getJob(resultJobId(jobId));
    return (job?.data as AgentResult | undefined) ?? null;
  }

  /** Polls until the result is published; reports progress changes on the way. */
  async waitForResult(jobId: string, options: WaitOptions = {}): Promise<AgentResult> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let lastProgress = '';
    for (;;) {
      const status = await this.getTask(jobId);
      if (status.result) return status.result;
      if (status.state === 'unknown')
        throw new InputError('unknown_job', `No job ${jobId} on ${TASKS_QUEUE}.`);
      const progress = JSON.stringify(status.progress);
      if (progress !== lastProgress) {
        lastProgress = progress;
        options.onProgress?.(status.progress);
      }
      if (Date.now() >= deadline) {
        throw new InputError('wait_timeout', `Job ${jobId} has not finished after ${options.timeoutMs} ms.`);
      }
      await sleep(options.pollMs ?? 250);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.tasks.close(), this.results.close()]);
    this.redis.disconnect();
  }

  /** Checks Redis once; a failed check is forgotten, so the next call tries again. */
  private connected(): Promise<void> {
    this.ready ??= assertRedisReachable(this.redis, this.redisUrl).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }
}
