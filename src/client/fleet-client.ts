// The typed client library: the same validated enqueue the CLI and the HTTP API use, for other TypeScript
// services to import. It never talks to a worker, only to Redis.
import { FlowProducer, Queue, type Job, type JobState, type Telemetry } from 'bullmq';
import { InputError } from '../kernel/errors.js';
import type { AgentResult } from '../kernel/types.js';
import { jobIdForKey, TASK_JOB_OPTIONS } from '../queue/job-options.js';
import { BATCHES_QUEUE, RESULTS_QUEUE, resultJobId, TASKS_QUEUE } from '../queue/names.js';
import { taskJobName } from '../queue/task-job-name.js';
import { assertRedisReachable, createRedis, type RedisClient } from '../queue/redis.js';
import { assertPrefixFits, OPTION_NAMES, redisTarget, type RedisTarget } from '../queue/redis-target.js';
import type { ResultArchive } from './result-archive-port.js';
import {
  formatFieldIssues,
  PARENT_ONLY_BY_FLEET,
  validateTask,
  type AgentTask,
  type FieldIssue,
} from '../queue/task-schema.js';
import { sleep } from '../kernel/sleep.js';
import {
  batchBudgetSchema,
  validateBatch,
  type BatchInput,
  type BatchJobData,
} from '../batch/batch-schema.js';
import {
  buildForecast,
  ForecastError,
  forecastForEnqueue,
  maxCostFromForecast,
  planForecast,
  storedForecast,
  type BatchForecast,
  type ForecastQuantile,
  type ForecastSettings,
  type IfNoHistory,
} from '../batch/forecast.js';
import { summarizeBatch, type BatchSummary } from '../batch/batch-summary.js';
import { enqueueBatch, type EnqueuedBatch } from '../batch/enqueue-batch.js';
import { SpendLedger } from '../fleet/spend-ledger.js';
import type { Catalog } from '../catalog/catalog.js';
import { CatalogStore } from '../catalog/catalog-store.js';
import { checkTaskAgainstCatalog } from '../catalog/check-task.js';
import { AWAITING_APPROVAL, isAwaitingApproval } from './awaiting-approval.js';
import { cancelJobTree } from '../queue/cancel-task.js';

export type { AgentTask, AgentResult, FieldIssue, BatchInput, BatchSummary, EnqueuedBatch, Catalog };
export type { BatchForecast, ForecastQuantile, ForecastSettings, IfNoHistory };
export { ForecastError };

/** Job states after which a task's result is (or is about to be) recorded in the store. */
const FINISHED: ReadonlySet<string> = new Set(['completed', 'failed']);

/** A task that breaks its schema; `issues` name each bad field. Nothing was enqueued. */
export class TaskValidationError extends InputError {
  override readonly name = 'TaskValidationError';
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[], where = '') {
    super('invalid_task', `Invalid task${where}: ${formatFieldIssues(issues)}`);
    this.issues = issues;
  }
}

/** Anything that emits `error`: BullMQ's queues and an ioredis client. */
interface ErrorEmitter {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Where the client's connection errors go: a RedisOutageLog (src/queue/redis-outage-log.ts) fits. Named by its
 * shape, so the client's types need no logger.
 */
export interface OutageWatch {
  watch(emitter: ErrorEmitter, source: string): unknown;
  watchConnection(redis: RedisClient, source: string): unknown;
}

export interface FleetClientOptions {
  /** Default: REDIS_URL's default, redis://127.0.0.1:6379. */
  redisUrl?: string;
  /** A Redis Cluster instead (as REDIS_CLUSTER_NODES): `host:port,…`; `prefix` must then hold a {hash tag}. */
  redisClusterNodes?: string | undefined;
  /** Redis behind Sentinel instead (as REDIS_SENTINELS): `host:port,…` of the sentinels, with redisSentinelName. */
  redisSentinels?: string | undefined;
  /** The master's name the sentinels know (as REDIS_SENTINEL_NAME). */
  redisSentinelName?: string | undefined;
  /**
   * With a cluster or Sentinel only (redisUrl carries its own: `rediss://user:pass@host`): the servers' ACL user
   * and password (as REDIS_USERNAME, REDIS_PASSWORD), TLS to them (as REDIS_TLS=on) trusting Node's default CAs or
   * `redisTlsCa`'s PEM certificates instead (REDIS_TLS_CA_FILE's content).
   */
  redisUsername?: string | undefined;
  redisPassword?: string | undefined;
  redisTls?: boolean | undefined;
  redisTlsCa?: string | undefined;
  /** The sentinels' own ACL user and password, when they ask for one (as REDIS_SENTINEL_USERNAME / _PASSWORD). */
  redisSentinelUsername?: string | undefined;
  redisSentinelPassword?: string | undefined;
  /** Default: agentfleet. */
  prefix?: string;
  /**
   * Where a Redis outage is reported: one warning when it starts and one line when it ends (give the
   * process's own, so an outage is one pair of lines however many clients and queues it has). Default: nowhere
   * (a call made meanwhile still rejects with an error that names the Redis setting used, e.g. REDIS_URL).
   */
  outages?: OutageWatch;
  /**
   * Asked for a task or batch whose jobs Redis no longer holds (the fleet's retention removed them), e.g. a
   * StoreResultArchive over MYSQL_URL. Default: none, and such a job is unknown.
   */
  archive?: ResultArchive;
  /**
   * Run history and the fleet's defaults, for batch forecasts (docs/batches.md): with them every batch is
   * enqueued with its forecast, and forecastBatch works. Default: none (no forecast is made).
   */
  forecast?: ForecastSettings;
  /**
   * BullMQ's OpenTelemetry support, e.g. `new BullMQOtel()` from bullmq-otel over the service's own SDK, or
   * `(await startTelemetry(…))?.bullmq` (src/telemetry/fleet-telemetry.ts): every enqueue is then a span whose
   * trace the worker's run continues (docs/telemetry.md). Default: none.
   */
  telemetry?: Telemetry;
}

export interface EnqueueBatchOptions {
  /** Sets the batch's maxCostUsd to the forecast's expected cost at this quantile (needs `forecast`). */
  maxCostFromForecast?: ForecastQuantile;
  /** With maxCostFromForecast, a task without history: refused (default) or counted at its worst case. */
  ifNoHistory?: IfNoHistory;
}

export interface EnqueuedBatchWithForecast extends EnqueuedBatch {
  /** The forecast stored with the batch; null when none was made (no `forecast` settings, or the store failed). */
  forecast: BatchForecast | null;
  /** Why no forecast was made although the client has `forecast` settings (the store could not be read). */
  forecastError: string | null;
}

export interface TaskStatus {
  /** BullMQ's state; `awaiting_approval` for a delayed job parked until a person decides (docs/approvals.md). */
  state: JobState | typeof AWAITING_APPROVAL | 'unknown';
  progress: unknown;
  result: AgentResult | null;
}

/**
 * What cancelTask did: `cancelling` (recorded: the task ends with stopReason `cancelled` once a worker has seen it,
 * at once if it runs now), `finished` (it ended before: nothing to cancel; its result, when there is one) or
 * `unknown` (no such task). `state` is the task's as the cancel found it; `children` the unfinished child agents
 * cancelled with it (their children included).
 */
export type CancelOutcome =
  | { outcome: 'cancelling'; state: TaskStatus['state']; children: number }
  | { outcome: 'finished'; state: TaskStatus['state']; result: AgentResult | null }
  | { outcome: 'unknown' };

export interface BatchStatus {
  /** running until every task has finished and the summary is made; failed if the aggregation gave up. */
  state: 'running' | 'completed' | 'failed';
  /** Over the tasks finished so far; final once completed. */
  summary: BatchSummary;
  jobIds: string[];
  /**
   * The batch's calls by approval state: added by the HTTP API, which reads the store; the client itself reads
   * Redis only and leaves it out (docs/approvals.md).
   */
  approvals?: { pending: number; approved: number; rejected: number; expired: number };
}

export interface WaitOptions {
  /** Give up after this long (ms). Default: no limit. */
  timeoutMs?: number;
  /** Called whenever the job's progress changes. */
  onProgress?: (progress: unknown) => void;
  pollMs?: number;
}

export class FleetClient {
  private readonly redis: RedisClient;
  private readonly tasks: Queue;
  private readonly results: Queue;
  private readonly batches: Queue;
  private readonly flow: FlowProducer;
  private readonly ledger: SpendLedger;
  private readonly target: RedisTarget;
  private readonly prefix: string;
  private readonly archive: ResultArchive | undefined;
  private readonly catalogs: CatalogStore;
  private readonly forecasts: ForecastSettings | undefined;
  /** The last catalog read, kept while its hash stays the same (its input schemas are converted once). */
  private catalog: Catalog | null = null;
  private ready: Promise<void> | undefined;

  constructor(options: FleetClientOptions = {}) {
    const prefix = options.prefix ?? 'agentfleet';
    this.target = redisTarget(
      {
        url: options.redisUrl,
        clusterNodes: options.redisClusterNodes,
        sentinels: options.redisSentinels,
        sentinelName: options.redisSentinelName,
        username: options.redisUsername,
        password: options.redisPassword,
        tls: options.redisTls,
        tlsCa: options.redisTlsCa,
        sentinelUsername: options.redisSentinelUsername,
        sentinelPassword: options.redisSentinelPassword,
      },
      OPTION_NAMES,
    );
    assertPrefixFits(this.target, prefix, 'prefix');
    this.archive = options.archive;
    this.forecasts = options.forecast;
    this.redis = createRedis(this.target, 'producer');
    this.prefix = prefix;
    const traced = options.telemetry ? { telemetry: options.telemetry } : {};
    this.tasks = new Queue(TASKS_QUEUE, { connection: this.redis, prefix, ...traced });
    this.results = new Queue(RESULTS_QUEUE, { connection: this.redis, prefix });
    this.batches = new Queue(BATCHES_QUEUE, { connection: this.redis, prefix, ...traced });
    this.flow = new FlowProducer({ connection: this.redis, prefix, ...traced });
    this.ledger = new SpendLedger({ redis: this.redis, prefix });
    this.catalogs = new CatalogStore(this.redis, prefix);
    // Connection errors surface as rejected calls; without listeners BullMQ would also print them raw.
    const emitters: ErrorEmitter[] = [this.tasks, this.results, this.batches, this.flow];
    if (options.outages) {
      options.outages.watchConnection(this.redis, 'client redis');
      for (const emitter of emitters) options.outages.watch(emitter, 'client queue');
    } else {
      for (const emitter of [this.redis, ...emitters]) emitter.on('error', () => undefined);
    }
  }

  /** Validates and enqueues one task. Throws TaskValidationError (nothing enqueued) on a bad task. */
  async enqueue(input: unknown): Promise<{ jobId: string }> {
    const [result] = await this.enqueueMany([input]);
    return result!;
  }

  /**
   * Validates every task first; enqueues only when all are valid. A task joins a batch only through
   * enqueueBatch: one whose `metadata.batch` names an existing batch is refused (see refuseBatchClaims).
   */
  async enqueueMany(inputs: readonly unknown[]): Promise<{ jobId: string }[]> {
    const where = (i: number) => (inputs.length > 1 ? ` #${i + 1}` : '');
    const tasks = inputs.map((input, i) => {
      const validation = validateTask(input);
      if (!validation.ok) throw new TaskValidationError(validation.issues, where(i));
      if (validation.task.parent !== undefined)
        throw new TaskValidationError([{ path: 'parent', message: PARENT_ONLY_BY_FLEET }], where(i));
      return validation.task;
    });
    await this.connected();
    const catalog = await this.getCatalog();
    if (catalog) {
      tasks.forEach((task, i) => {
        const issues = checkTaskAgainstCatalog(task, catalog);
        if (issues.length > 0) throw new TaskValidationError(issues, where(i));
      });
    }
    await this.refuseBatchClaims(tasks, where);
    const jobs = await this.tasks.addBulk(
      tasks.map((task) => ({
        name: taskJobName(task),
        data: task,
        opts: {
          ...TASK_JOB_OPTIONS,
          ...(task.idempotencyKey ? { jobId: jobIdForKey(task.idempotencyKey) } : {}),
        },
      })),
    );
    return jobs.map((job) => ({ jobId: String(job.id) }));
  }

  /**
   * The catalog the workers serve (the latest one published), or null before any worker published one: tasks
   * are then checked for their shape only, and a worker fails a task for an agent it does not serve.
   */
  async getCatalog(): Promise<Catalog | null> {
    await this.connected();
    const latest = await this.catalogs.latest();
    if (latest?.hash !== this.catalog?.hash) this.catalog = latest;
    return this.catalog;
  }

  async getTask(jobId: string): Promise<TaskStatus> {
    await this.connected();
    const [job, published] = await Promise.all([this.tasks.getJob(jobId), this.publishedResult(jobId)]);
    if (!job) {
      const result = published ?? (await this.archive?.getResult(jobId)) ?? null;
      return { state: result ? 'completed' : 'unknown', progress: null, result };
    }
    const state = await job.getState();
    if (isAwaitingApproval(state, job.progress)) {
      // The progress was read before the state: a job woken by a decision, taken (its progress cleared) and
      // delayed again for another reason (its tenant's slot) in between would look parked. Read it again, after.
      const progress = (await this.tasks.getJob(jobId))?.progress;
      if (isAwaitingApproval(state, progress))
        return { state: AWAITING_APPROVAL, progress, result: published };
      return { state, progress: progress ?? null, result: published };
    }
    if (published || !FINISHED.has(state))
      return { state, progress: job.progress ?? null, result: published };
    // Read again: the result may have been published after the first read, just before the job finished. If it is
    // still not there, it was trimmed before the job itself (results count failed tasks' too): ask the archive.
    const result = (await this.publishedResult(jobId)) ?? (await this.archive?.getResult(jobId)) ?? null;
    return { state, progress: job.progress ?? null, result };
  }

  /**
   * Cancels a task (docs/cancelling.md): waiting, it never runs a model call; running, its worker stops it now;
   * parked for approval or for its child agents, it is woken (its children cancelled with it). It ends as a
   * result like any other, `status: "stopped"`, `stopReason: "cancelled"`, with what it spent, and `stopDetail`
   * saying who cancelled (`by`, default `client`). Cancelling again changes nothing. Nothing already done (an
   * email sent) is undone.
   */
  async cancelTask(jobId: string, options: { by?: string } = {}): Promise<CancelOutcome> {
    const status = await this.getTask(jobId);
    if (status.state === 'unknown') return { outcome: 'unknown' };
    const job = await this.tasks.getJob(jobId);
    if (status.result || !job) return { outcome: 'finished', state: status.state, result: status.result };
    const ports = { redis: this.redis, prefix: this.prefix, getJob: (id: string) => this.tasks.getJob(id) };
    const tree = await cancelJobTree(ports, job, { by: options.by ?? 'client', at: Date.now() });
    // Finished between the two reads: as if it had been found so.
    if (tree.state === 'completed' || tree.state === 'failed')
      return { outcome: 'finished', state: tree.state, result: await this.publishedResult(jobId) };
    return { outcome: 'cancelling', state: status.state, children: tree.children };
  }

  /**
   * The published result, or null while the job has not finished. Past the fleet's retention
   * it comes from the archive, when the client has one.
   */
  async getResult(jobId: string): Promise<AgentResult | null> {
    await this.connected();
    const published = await this.publishedResult(jobId);
    if (published || !this.archive) return published;
    const job = await this.tasks.getJob(jobId);
    if (job && !FINISHED.has(await job.getState())) return null;
    return this.archive.getResult(jobId);
  }

  /** Resolves once Redis answers (the API's health check). Reads nothing else: the archive's store least of all. */
  async ping(): Promise<void> {
    await this.connected();
    await this.redis.ping();
  }

  private async publishedResult(jobId: string): Promise<AgentResult | null> {
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
      // A completed job published its result before it completed: if it is not there now, it never comes back.
      if (status.state === 'completed') {
        throw new InputError(
          'result_expired',
          `The result of job ${jobId} is past the results retention (RESULTS_KEEP_*); give the client an ` +
            `archive to read it from the store.`,
        );
      }
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

  /**
   * Validates a batch and enqueues it: every task, or nothing. Throws TaskValidationError
   * naming `tasks.<n>.<field>` on a bad task. With `forecast` settings, the batch is enqueued with its forecast
   * (docs/batches.md); `maxCostFromForecast` sets its budget from it, or throws ForecastError (nothing
   * enqueued) when it cannot.
   */
  async enqueueBatch(
    input: unknown,
    batchId?: string,
    options: EnqueueBatchOptions = {},
  ): Promise<EnqueuedBatchWithForecast> {
    const batch = await this.checkedBatch(input);
    let forecast: BatchForecast | null = null;
    let forecastError: string | null = null;
    if (options.maxCostFromForecast) {
      forecast = await this.forecastWithBudget(batch, options.maxCostFromForecast, options.ifNoHistory);
      batch.budget = forecast.batchBudget ?? undefined;
    } else if (this.forecasts) {
      ({ forecast, error: forecastError } = await forecastForEnqueue(
        this.forecasts,
        batch,
        await this.getCatalog(),
      ));
    }
    const enqueued = await enqueueBatch(
      { flow: this.flow, ledger: this.ledger },
      batch,
      batchId,
      forecast ? storedForecast(forecast) : null,
    );
    return { ...enqueued, forecast, forecastError };
  }

  /**
   * The forecast of a batch (docs/batches.md), validated and checked as enqueueBatch does; enqueues nothing.
   * Needs the client's `forecast` settings. With `maxCostFromForecast`, the forecast under the budget that
   * enqueueBatch would set (or ForecastError, as it would throw).
   */
  async forecastBatch(input: unknown, options: EnqueueBatchOptions = {}): Promise<BatchForecast> {
    const batch = await this.checkedBatch(input);
    if (options.maxCostFromForecast) {
      return this.forecastWithBudget(batch, options.maxCostFromForecast, options.ifNoHistory);
    }
    return buildForecast(await this.plan(batch), batch.budget ?? null);
  }

  private async checkedBatch(input: unknown): Promise<BatchInput> {
    const validation = validateBatch(input);
    if (!validation.ok) throw new TaskValidationError(validation.issues, ' batch');
    await this.connected();
    const catalog = await this.getCatalog();
    if (catalog) {
      const issues = validation.batch.tasks.flatMap((task, i) =>
        checkTaskAgainstCatalog(task, catalog).map((issue) => ({
          ...issue,
          path: `tasks.${i}.${issue.path}`,
        })),
      );
      if (issues.length > 0) throw new TaskValidationError(issues, ' batch');
    }
    return validation.batch;
  }

  private async plan(batch: BatchInput) {
    if (!this.forecasts) {
      throw new ForecastError(
        'this client reads no run history: give FleetClient the `forecast` option (the CLI and the API read MYSQL_URL)',
      );
    }
    return planForecast(this.forecasts, batch.tasks, await this.getCatalog());
  }

  private async forecastWithBudget(
    batch: BatchInput,
    quantile: ForecastQuantile,
    ifNoHistory: IfNoHistory = 'refuse',
  ): Promise<BatchForecast> {
    if (batch.budget?.maxCostUsd !== undefined) {
      throw new ForecastError(
        'budget.maxCostUsd and maxCostFromForecast both set the batch budget in dollars: give one of them',
      );
    }
    const plan = await this.plan(batch);
    const maxCostUsd = maxCostFromForecast(buildForecast(plan, batch.budget ?? null), quantile, ifNoHistory);
    const budget = batchBudgetSchema.safeParse({ ...batch.budget, maxCostUsd });
    if (!budget.success) {
      throw new ForecastError(
        `the forecast's ${quantile} ($${maxCostUsd}) cannot be a batch budget: budget.maxCostUsd ${budget.error.issues[0]?.message ?? 'is out of range'}`,
      );
    }
    return buildForecast(plan, budget.data, { quantile, ifNoHistory });
  }

  /** The batch's state and its summary so far; null for an unknown batch. */
  async getBatch(batchId: string): Promise<BatchStatus | null> {
    await this.connected();
    const parent = await this.batches.getJob(batchId);
    if (!parent) return this.archivedBatch(batchId);
    const data = parent.data as BatchJobData;
    const state = await parent.getState();
    if (state === 'completed' && parent.returnvalue) {
      return { state: 'completed', summary: parent.returnvalue as BatchSummary, jobIds: data.jobIds };
    }
    const results = await Promise.all(data.jobIds.map((id) => this.publishedResult(id)));
    const finished = results.filter((result): result is AgentResult => result !== null);
    return {
      state: state === 'failed' ? 'failed' : 'running',
      summary: summarizeBatch(batchId, data.jobIds.length, finished),
      jobIds: data.jobIds,
    };
  }

  /** Polls until the batch completes; reports its summary so far whenever it changes. */
  async waitForBatch(
    batchId: string,
    options: Omit<WaitOptions, 'onProgress'> & { onProgress?: (summary: BatchSummary) => void } = {},
  ): Promise<BatchStatus> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let last = '';
    for (;;) {
      const status = await this.getBatch(batchId);
      if (!status) throw new InputError('unknown_batch', `No batch ${batchId} on ${BATCHES_QUEUE}.`);
      const progress = JSON.stringify(status.summary);
      if (progress !== last) {
        last = progress;
        options.onProgress?.(status.summary);
      }
      if (status.state !== 'running') return status;
      if (Date.now() >= deadline) {
        throw new InputError(
          'wait_timeout',
          `Batch ${batchId} has not finished after ${options.timeoutMs} ms.`,
        );
      }
      await sleep(options.pollMs ?? 500);
    }
  }

  /** A batch whose parent job the retention removed, as the store has it. */
  private async archivedBatch(batchId: string): Promise<BatchStatus | null> {
    const archived = await this.archive?.getBatch(batchId);
    if (!archived) return null;
    if (archived.state === 'completed' && archived.summary)
      return { state: 'completed', summary: archived.summary, jobIds: archived.jobIds };
    const results = await Promise.all(archived.jobIds.map((id) => this.getResult(id)));
    const finished = results.filter((result): result is AgentResult => result !== null);
    return {
      state: 'running',
      summary: summarizeBatch(batchId, archived.jobIds.length, finished),
      jobIds: archived.jobIds,
    };
  }

  async close(): Promise<void> {
    await Promise.allSettled([
      this.tasks.close(),
      this.results.close(),
      this.batches.close(),
      this.flow.close(),
    ]);
    this.redis.disconnect();
  }

  /**
   * `metadata.batch` is where a batch's tasks carry its id. A lone task naming an existing batch
   * would look like one of its tasks, so it is refused; naming no batch, it is a label and joins nothing (the
   * worker charges a batch's budget only to the batch's own jobs: src/worker/batch-membership.ts).
   */
  private async refuseBatchClaims(tasks: readonly AgentTask[], where: (i: number) => string): Promise<void> {
    for (const [i, task] of tasks.entries()) {
      const batch = task.metadata?.['batch'];
      if (typeof batch !== 'string' || !(await this.batches.getJob(batch))) continue;
      const message = `names the existing batch ${batch}: a task joins a batch only through the batch API (POST /v1/batches, --batch, enqueueBatch)`;
      throw new TaskValidationError([{ path: 'metadata.batch', message }], where(i));
    }
  }

  /** Checks Redis once; a failed check is forgotten, so the next call tries again. */
  private connected(): Promise<void> {
    this.ready ??= assertRedisReachable(this.redis, this.target).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }
}
