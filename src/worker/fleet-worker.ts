// A BullMQ Worker running agent tasks, with the lifecycle of bullmq's production guide: concurrency per
// process, locks that survive minute-long jobs, stalled jobs resumed elsewhere, a final failure that still
// publishes a result, and a graceful close that is safe to call twice.
import type { KeepJobs, Queue, Telemetry } from 'bullmq';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import type { AgentResult } from '../kernel/types.js';
import { treeUsageOf } from '../kernel/child-calls.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import { TASKS_QUEUE } from '../queue/names.js';
import { retryDelayMs, type RetrySchedule } from '../queue/retry-schedule.js';
import { RunFinisher, startOf } from './run-finisher.js';
import { watchCancels, type CancelWatch } from './cancel-watch.js';
import {
  agentNamedBy,
  createTaskProcessor,
  failedResult,
  heldChildTask,
  SHUTDOWN_REASON,
  type TaskProcessorDeps,
} from './task-processor.js';

export interface FleetWorkerOptions {
  connection: RedisClient;
  prefix: string;
  concurrency: number;
  /**
   * How long a job's lock lasts without renewal. The worker renews it every half of this while the process
   * lives, so it only matters when a process dies or its event loop stalls: long enough (60 s by default)
   * that a busy but healthy worker never loses a job lasting minutes, short enough that a dead worker's jobs
   * are picked up again within about a minute.
   */
  lockDurationMs: number;
  /**
   * How often workers look for jobs whose lock expired (30 s by default); such jobs resume elsewhere. BullMQ
   * runs one such check per interval for the whole fleet, so every worker should use the same interval.
   */
  stalledIntervalMs: number;
  /** How often a job may be found stalled (its worker died) before it is failed for good. Default 2. */
  maxStalledCount?: number;
  /** On close, running jobs get this long to finish before they are checkpointed and released. */
  shutdownGraceMs: number;
  /**
   * Waits between the attempts of a job after an infrastructure failure (task jobs' `capped-exponential`
   * backoff); the base is also how often the sweeper looks for outcomes of failed jobs still to record.
   */
  retry: RetrySchedule;
  /** Finished task jobs kept in Redis (the fleet's retention); jobs enqueued with their own keep theirs. */
  retention?: { completed: KeepJobs; failed: KeepJobs };
  /** BullMQ's OpenTelemetry (bullmq-otel): each job's `process` span continues its producer's trace. */
  telemetry?: Telemetry;
}

export class FleetWorker {
  readonly worker: Worker<unknown, AgentResult>;
  private closing: Promise<void> | undefined;
  private readonly finisher: RunFinisher;
  /** The subscription to the fleet's cancels: a run cancelled anywhere is aborted here if it runs here. */
  private cancels: Promise<CancelWatch | undefined> | undefined;

  constructor(
    private readonly deps: TaskProcessorDeps & { results: Queue },
    private readonly options: FleetWorkerOptions,
  ) {
    this.finisher = new RunFinisher(deps);
    this.worker = new Worker(TASKS_QUEUE, createTaskProcessor(deps, this.finisher), {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
      // A job whose worker keeps dying under it is probably what kills workers: fail it rather than loop.
      maxStalledCount: options.maxStalledCount ?? 2,
      // Effectively unlimited; BullMQ honours a manual rate limit (queue.rateLimit, after a 429) only when a
      // limiter is set.
      limiter: { max: 1_000_000, duration: 1_000 },
      // Jobs enqueued with the `capped-exponential` backoff (TASK_JOB_OPTIONS) wait what this says.
      settings: { backoffStrategy: (attemptsMade: number) => retryDelayMs(options.retry, attemptsMade) },
      autorun: false,
      removeOnComplete: options.retention?.completed,
      removeOnFail: options.retention?.failed,
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    });
    this.worker.on('failed', (job, error) => {
      if (job) void this.onFailed(job, error);
    });
    // Errors (mostly Redis going away) are reported by the process, once per outage: see RedisOutageLog.
  }

  /**
   * Subscribes to cancels before taking any job: a run that starts after its start-time check of the cancel mark
   * then cannot miss the announcement of a cancel made just after that check.
   */
  start(): void {
    const { connection, prefix } = this.options;
    const abort = (jobId: string, reason: string) => this.worker.cancelJob(jobId, reason);
    this.cancels = watchCancels(connection, prefix, abort, this.deps.logger).catch((err: unknown) => {
      this.deps.logger.warn(
        { err },
        'not subscribed to cancels: running jobs are cancelled at their next start',
      );
      return undefined;
    });
    void this.cancels.then(() => {
      if (this.closing) return;
      void this.worker.run();
      this.finisher.sweepEvery(this.options.retry.baseMs);
      this.deps.logger.info({ concurrency: this.options.concurrency }, 'worker started');
    });
  }

  /** Stops taking jobs, lets running ones finish within the grace period, then releases the rest. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.finisher.stop();
      const timer = setTimeout(
        () => this.releaseRunningJobs('grace period over'),
        this.options.shutdownGraceMs,
      );
      try {
        await this.worker.close();
      } finally {
        clearTimeout(timer);
        await (await this.cancels)?.close();
      }
    })();
    return this.closing;
  }

  /** Ends the grace period now: running jobs are checkpointed and released (an operator insisting). */
  releaseRunningJobs(why: string): void {
    this.deps.logger.info(`${why}: checkpointing and releasing running jobs`);
    this.worker.cancelAllJobs(SHUTDOWN_REASON);
  }

  private priceOf(job: Job) {
    const model = (job.data as { model?: unknown } | undefined)?.model;
    try {
      return priceOf(
        typeof model === 'string' ? model : this.deps.env.LLM_MODEL,
        configuredPrices(this.deps.env),
      );
    } catch {
      return { inputPerMillion: 0, outputPerMillion: 0 };
    }
  }

  /**
   * A job that failed for good without a published result (a stalled job given up, Redis down through every
   * attempt) still gets one: the outcome it kept, or a failure with what its checkpoint says it spent.
   */
  private async onFailed(job: Job, error: Error): Promise<void> {
    const final =
      error instanceof UnrecoverableError ||
      error.name === 'UnrecoverableError' ||
      job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!final) return;
    const jobId = String(job.id);
    try {
      // Most jobs failed for good have published their result already (a failed run): nothing more to do.
      if (await this.deps.publisher.isPublished(jobId)) return;
      const kept = await this.deps.outcomes.load(jobId);
      const result = kept?.result ?? (await this.exhaustedResult(job, error));
      await this.finisher.finish({
        result,
        start: startOf(job, this.deps.env),
        recordTries: kept?.recordTries ?? 0,
        recheck: true,
        whileDown: 'sweep',
      });
      // A child agent's hold is settled with what its checkpoint says it spent (a genuine child only: a BullMQ
      // child of the job its data names as its parent, on the tasks queue; a batch's task is a BullMQ child too).
      const held = heldChildTask(job, this.options.prefix);
      if (held) await this.deps.children?.ended(held, result, this.deps.logger);
    } catch (err) {
      this.deps.logger.error({ err, jobId }, 'could not publish the result of a failed job');
    }
  }

  private async exhaustedResult(job: Job, error: Error): Promise<AgentResult> {
    const jobId = String(job.id);
    const state = await this.deps.checkpoints.load(jobId);
    const result = failedResult(
      jobId,
      {
        kind: 'system',
        code: 'attempts_exhausted',
        message: `Failed after ${job.attemptsMade} attempts: ${error.message}`,
        retryable: false,
      },
      agentNamedBy(job.data, this.deps.agents),
    );
    if (state) {
      result.steps = state.steps;
      result.toolCalls = state.toolCalls;
      result.usage = treeUsageOf(state, state.price ?? this.priceOf(job));
      if (state.children) result.children = [...state.children];
    }
    return result;
  }
}
