// Wiring of a worker process: configuration, logger, store, Redis, tools, model, the BullMQ worker and
// its signals. Kept apart from the entry file so the demo can start workers in-process.
import { ConfigError } from '../kernel/errors.js';
import { CONFIG_EXIT_CODE } from './supervisor.js';
import { Queue, Worker } from 'bullmq';
import { env as readEnv, redisTargetOf, type Env } from '../../config/env.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { scrubText } from '../logging/redact.js';
import { BATCHES_QUEUE, EVENTS_QUEUE, RESULTS_QUEUE, TASKS_QUEUE } from '../queue/names.js';
import { ApprovalStore } from '../approvals/approval-store.js';
import { ApprovalEvents } from '../approvals/approval-events.js';
import { ApprovalParking } from './approval-parking.js';
import { ChildJobs } from './child-jobs.js';
import { RunNotes } from './run-notes.js';
import { supersedeEarlierEffects } from '../effects/reused-job-effects.js';
import { MysqlNoteStore } from '../notes/notes-store.js';
import { tokenCounterFor } from '../kernel/tokens.js';
import { ChildHolds } from '../fleet/child-holds.js';
import { BatchRecords } from '../batch/batch-record.js';
import { BatchReportStore } from '../reports/report-store.js';
import { createBatchAggregator } from './batch-aggregator.js';
import { BatchTracker } from './batch-tracker.js';
import { fleetLimitsFromEnv, gateForJob, type FleetGate } from '../fleet/fleet-gate.js';
import { TenantSlots } from '../fleet/tenant-slots.js';
import { FleetMetrics } from '../metrics/fleet-metrics.js';
import { startMetricsServer, type MetricsServer } from '../metrics/metrics-server.js';
import { assertRedisReachable, createRedis } from '../queue/redis.js';
import { RedisOutageLog } from '../queue/redis-outage-log.js';
import { retentionFrom } from '../queue/retention.js';
import { watchServerChange } from '../queue/server-change.js';
import { migrate } from '../store/migrate.js';
import { createStorePool } from '../store/pool.js';
import { RunsRepository } from '../store/runs-repository.js';
import { CheckpointStore } from './checkpoint-store.js';
import { FleetWorker } from './fleet-worker.js';
import type { JobLimits } from './task-processor.js';
import { OutcomeStore } from './outcome-store.js';
import { RunJournal } from './run-journal.js';
import { startSchedules } from '../schedules/schedules-runtime.js';
import { forecastDefaultsOf } from '../batch/forecast.js';
import { RunHistory } from '../store/run-history.js';
import { modelFactoryFrom, noteEmbedderFrom } from './model-factory.js';
import { ResultPublisher } from './result-publisher.js';
import { ResultsRetention } from './results-retention.js';
import { startStoreSweeper } from './store-sweeper.js';
import { handleShutdownSignals } from './shutdown-signals.js';
import type { Fleet } from '../kernel/define-fleet.js';
import { loadFleetConfig } from './fleet-config.js';
import { openFleet } from './fleet-runtime.js';
import { publishCatalog } from './catalog-publisher.js';
import { effectsInFlight } from '../kernel/effects-in-flight.js';
import { settlesWithin } from '../util/with-timeout.js';
import { startTelemetry, type FleetTelemetry } from '../telemetry/fleet-telemetry.js';
import type { RedisClient } from '../queue/redis.js';
import { limitedModels } from './limited-models.js';

export interface WorkerProcess {
  worker: FleetWorker;
  stop(): Promise<void>;
}

export async function startWorkerProcess(
  options: {
    env?: Env;
    logger?: Logger;
    handleSignals?: boolean;
    /** The fleet to serve; default the configuration FLEET_CONFIG names (fleet-config.ts). */
    fleet?: Fleet;
    /**
     * For the built-in configuration: called once when its data database is absent, then opened again. The
     * repository's `npm run worker` seeds the demo's there when DATA_MYSQL_URL is unset.
     */
    whenDataDatabaseMissing?: (env: Env) => Promise<void>;
  } = {},
): Promise<WorkerProcess> {
  const logger = options.logger ?? createLogger('worker');
  let config: Env;
  try {
    config = options.env ?? readEnv();
    priceOf(config.LLM_MODEL, configuredPrices(config));
  } catch (error) {
    return fatal(logger, error);
  }
  try {
    // Undefined, and no exporter loaded, unless an OTLP endpoint is configured (docs/telemetry.md).
    const telemetry = await startTelemetry({
      serviceName: 'agent-fleet-worker',
      modelBaseUrl: config.OPENAI_BASE_URL,
      logger,
    });
    const createModel = modelFactoryFrom(config);
    const whenMissing = options.whenDataDatabaseMissing;
    const loaded = options.fleet
      ? { fleet: options.fleet, source: 'startWorker' }
      : await loadFleetConfig(config, {
          whenDataDatabaseMissing: whenMissing ? () => whenMissing(config) : undefined,
        });
    logger.info({ source: loaded.source ?? 'built-in configuration' }, 'fleet configuration loaded');
    const stores = await openStores(config, logger);
    const connection = createRedis(redisTargetOf(config), 'worker');
    // One line when Redis goes away and one when it is back, from every queue and connection of the process.
    const outages = new RedisOutageLog(logger).watchConnection(connection);
    await assertRedisReachable(connection, redisTargetOf(config));
    const retention = retentionFrom(config);
    const queues = openQueues(config, connection, outages, retention, telemetry, logger);
    const { metrics, metricsServer } = await startMetrics(config, queues, logger);
    const approvalStore = new ApprovalStore(stores.pool);
    metrics.watchApprovals(approvalStore);
    const limits = fleetLimitsFromEnv(connection, config);
    // A booking the old master took may be gone when the connection comes back on a new one (a failover).
    connection.on('close', () => limits.ledger.connectionLost());
    const tools = await openFleet(loaded.fleet, {
      store: stores.pool,
      effectStore: stores.effectPool,
      env: config,
      logger,
      onEmailSettled: (outcome) => metrics.observeEmailSettlement(outcome),
    });
    metrics.knowTools(tools.toolList.map((tool) => tool.name));
    const catalog = await publishCatalog(tools, connection, config.QUEUE_PREFIX, logger, metrics);
    const aggregator = startBatchAggregator(config, connection, stores, queues, retention, logger);
    outages.watch(aggregator, 'batch aggregator');
    const checkpoints = new CheckpointStore(connection, config.QUEUE_PREFIX);
    const publisher = new ResultPublisher(queues.results, {
      keep: retention.results,
      keepFailed: retention.failed,
      onPublished: () => queues.resultsRetention.poke(),
    });
    const stopWatchingServer = watchServerChange(
      connection,
      () => void republishLostResults(publisher, logger),
      (err) => logger.warn({ err }, 'could not read which Redis server the connection is on'),
    );
    const worker = new FleetWorker(
      {
        env: config,
        checkpoints,
        outcomes: new OutcomeStore(connection, config.QUEUE_PREFIX),
        redis: connection,
        repository: new RunsRepository(stores.pool),
        journal: new RunJournal(new RunsRepository(stores.journalPool), {
          onWrite: (ms) => metrics.observeStoreWrite(ms),
        }),
        publisher,
        tools: tools.tools,
        agents: tools.agents,
        createModel: limitedModels(createModel, limits.limiter, metrics, logger),
        gateFor: jobGates(limits, queues.tasks, metrics, logger),
        ...(config.TENANT_CONCURRENCY === undefined
          ? {}
          : {
              tenantSlots: new TenantSlots({
                redis: connection,
                prefix: config.QUEUE_PREFIX,
                limit: config.TENANT_CONCURRENCY,
                leaseMs: config.WORKER_LOCK_DURATION_MS,
              }),
            }),
        metrics,
        tracing: telemetry,
        batches: new BatchTracker(queues.batches, new BatchRecords(stores.pool)),
        children: new ChildJobs(
          queues.tasks,
          publisher,
          tools.agents,
          checkpoints,
          new ChildHolds(limits.ledger),
        ),
        approvals: new ApprovalParking(approvalStore, new ApprovalEvents(queues.events)),
        supersedeEffects: (jobId, createdAt) => supersedeEarlierEffects(stores.pool, jobId, createdAt),
        notes: new RunNotes(
          new MysqlNoteStore(stores.pool),
          tokenCounterFor(config.LLM_MODEL),
          noteEmbedderFrom(config),
        ),
        logger,
        results: queues.results,
      },
      {
        connection,
        prefix: config.QUEUE_PREFIX,
        concurrency: config.WORKER_CONCURRENCY,
        lockDurationMs: config.WORKER_LOCK_DURATION_MS,
        stalledIntervalMs: config.WORKER_STALLED_INTERVAL_MS,
        maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
        shutdownGraceMs: config.WORKER_SHUTDOWN_GRACE_MS,
        retry: { baseMs: config.WORKER_RETRY_BASE_MS, maxMs: config.WORKER_RETRY_MAX_MS },
        retention,
        telemetry: telemetry?.bullmq,
      },
    );
    outages.watch(worker.worker, 'worker');
    const schedules = await startSchedules({
      connection,
      prefix: config.QUEUE_PREFIX,
      file: config.SCHEDULES_FILE,
      ledger: limits.ledger,
      logger,
      retention,
      outages,
      // Firings are stored with their forecast, from this store's run history.
      forecast: { history: new RunHistory(stores.pool), defaults: forecastDefaultsOf(config) },
    });
    // Deletes what is past STORE_KEEP_STEPS_DAYS and STORE_KEEP_RUNS_DAYS, one worker of the fleet at a time, at
    // start and every STORE_SWEEP_INTERVAL_MS; fails runs left running by a crash (`abandoned`).
    const storeSweeper = startStoreSweeper({
      pool: stores.pool,
      redis: connection,
      prefix: config.QUEUE_PREFIX,
      keepStepsDays: config.STORE_KEEP_STEPS_DAYS,
      keepRunsDays: config.STORE_KEEP_RUNS_DAYS,
      intervalMs: config.STORE_SWEEP_INTERVAL_MS,
      logger,
      onDeleted: (table, rows) => metrics.observeStoreRowsDeleted(table, rows),
      watchErrors: (emitter, source) => outages.watch(emitter, source),
    });
    worker.start();

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= stopWorkerProcess(config, logger, {
        running: [worker.close(), aggregator.close(), schedules.close(), storeSweeper.close()],
        closeCatalog: () => catalog.close(),
        closeConnections: async () => {
          stopWatchingServer();
          await queues.resultsRetention.close();
          await queues.batches.close();
          await queues.events.close();
          await metricsServer?.close();
          await queues.tasks.close();
          await queues.results.close();
          await tools.close();
          await stores.pool.end();
          await stores.effectPool.end();
          await stores.journalPool.end();
        },
        telemetry,
        connection,
      }));
    if (options.handleSignals ?? true) {
      handleShutdownSignals({
        logger,
        stop,
        hurry: () => worker.releaseRunningJobs('asked again'),
      });
    }
    return { worker, stop };
  } catch (error) {
    return fatal(logger, error);
  }
}

/** The store's pools: the fleet's own (migrated first), and two that run several statements in one query. */
async function openStores(config: Env, logger: Logger) {
  const pool = await createStorePool(config.MYSQL_URL);
  await migrate(pool, { logger });
  // The effect ledger's own pool: several statements in one query (its SQL only): a reply's claims in one.
  const effectPool = await createStorePool(config.MYSQL_URL, {
    connectionLimit: 5,
    multipleStatements: true,
  });
  // The journal's own small pool: several statements in one query, for the SQL it builds itself and nothing else.
  const journalPool = await createStorePool(config.MYSQL_URL, {
    connectionLimit: 2,
    multipleStatements: true,
  });
  return { pool, effectPool, journalPool };
}

type Stores = Awaited<ReturnType<typeof openStores>>;

/** The queues the worker writes to, watched for outages; the results queue trimmed to its retention. */
function openQueues(
  config: Env,
  connection: RedisClient,
  outages: RedisOutageLog,
  retention: ReturnType<typeof retentionFrom>,
  telemetry: FleetTelemetry | undefined,
  logger: Logger,
) {
  const traced = telemetry ? { telemetry: telemetry.bullmq } : {};
  const results = new Queue(RESULTS_QUEUE, { connection, prefix: config.QUEUE_PREFIX, ...traced });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix: config.QUEUE_PREFIX, ...traced });
  const batches = new Queue(BATCHES_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
  const events = new Queue(EVENTS_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
  outages
    .watch(results, 'results queue')
    .watch(tasks, 'tasks queue')
    .watch(batches, 'batches queue')
    .watch(events, 'events queue');
  // Redis being away is reported by the outage log; the next publish trims again.
  const resultsRetention = new ResultsRetention(results, retention.results, (err) =>
    logger.warn({ reason: err instanceof Error ? err.message : String(err) }, 'could not trim agent-results'),
  );
  return { results, tasks, batches, events, resultsRetention };
}

type Queues = ReturnType<typeof openQueues>;

/**
 * The process's metrics, and their endpoint unless METRICS_PORT is 0. Several workers on one host share
 * METRICS_PORT: each takes the next free port of the span. A worker with none left does not start: its metrics
 * would be missing with nothing but a log line to say so.
 */
async function startMetrics(config: Env, queues: Queues, logger: Logger) {
  const metrics = new FleetMetrics();
  metrics.watchQueues([queues.tasks, queues.results]);
  if (config.METRICS_PORT === 0) return { metrics, metricsServer: undefined };
  const metricsServer: MetricsServer = await startMetricsServer(metrics, {
    host: config.METRICS_HOST,
    port: config.METRICS_PORT,
    span: config.METRICS_PORT_SPAN,
  });
  logger.info(
    { host: config.METRICS_HOST, port: metricsServer.port },
    `metrics on http://${config.METRICS_HOST}:${metricsServer.port}/metrics`,
  );
  return { metrics, metricsServer };
}

/**
 * The fleet's shared limits for each job. After a 429 the whole fleet pauses: the limiter stops model calls, the
 * queue stops handing out jobs.
 */
function jobGates(
  limits: ReturnType<typeof fleetLimitsFromEnv>,
  tasks: Queue,
  metrics: FleetMetrics,
  logger: Logger,
): (job: JobLimits) => FleetGate {
  const { ledger, limiter, limitRequests, tokens } = limits;
  const onRateLimited = (ms: number) => {
    logger.warn({ pauseMs: ms }, 'model endpoint answered 429: pausing the fleet');
    tasks.rateLimit(ms).catch((err: unknown) => logger.warn({ err }, 'could not rate-limit the queue'));
  };
  return ({ batchId, tenant, model, hold }) =>
    gateForJob({
      ledger,
      limiter,
      limitRequests,
      batchId,
      tenant,
      hold,
      tokens: tokens.for(model),
      onRateLimited: (ms) => {
        metrics.observeRatePause(model, 'status_429');
        onRateLimited(ms);
      },
      onWaited: (reason, ms) => metrics.observeRateWait(model, reason, ms),
      onError: (err) => logger.warn({ err }, 'spend ledger'),
    });
}

/** Sums each batch's results into its summary as they finish, records its row and stores its report. */
function startBatchAggregator(
  config: Env,
  connection: RedisClient,
  stores: Stores,
  queues: Queues,
  retention: ReturnType<typeof retentionFrom>,
  logger: Logger,
): Worker {
  return new Worker(
    BATCHES_QUEUE,
    createBatchAggregator({
      results: queues.results,
      records: new BatchRecords(stores.pool),
      reports: new BatchReportStore(stores.pool),
      logger,
      storeRetryMs: config.WORKER_RETRY_BASE_MS,
    }),
    {
      connection,
      prefix: config.QUEUE_PREFIX,
      concurrency: 2,
      // A batch parent carries the summary: kept like a result.
      removeOnComplete: retention.results,
      removeOnFail: retention.failed,
    },
  );
}

/**
 * Running jobs are handed back through Redis: while it is away, closing would wait for it forever. Past the grace
 * and a margin the worker goes on without them; their locks expire and they resume elsewhere. Runs cancelled at
 * the grace's end may have left a send in flight: it finishes and is recorded first.
 */
async function stopWorkerProcess(
  config: Env,
  logger: Logger,
  parts: {
    running: Promise<unknown>[];
    closeCatalog(): void;
    closeConnections(): Promise<void>;
    telemetry: FleetTelemetry | undefined;
    connection: RedisClient;
  },
): Promise<void> {
  if (!(await settlesWithin(Promise.all(parts.running), config.WORKER_SHUTDOWN_GRACE_MS + STOP_MARGIN_MS))) {
    logger.warn('running jobs not handed back in time (Redis unreachable?): they resume after their lock');
  }
  if (effectsInFlight.size > 0) {
    logger.info({ inFlight: effectsInFlight.size }, 'waiting for side effects in flight');
    if (!(await effectsInFlight.settled(config.WORKER_SHUTDOWN_GRACE_MS))) {
      logger.warn({ inFlight: effectsInFlight.size }, 'side effects still in flight at exit');
    }
  }
  parts.closeCatalog();
  if (!(await settlesWithin(parts.closeConnections(), STOP_MARGIN_MS))) {
    logger.warn('connections not closed in time: leaving them');
  }
  await parts.telemetry?.shutdown();
  parts.connection.disconnect();
  logger.info('worker stopped');
}

/** What a step of the stop may take beyond its grace before the worker goes on without it. */
const STOP_MARGIN_MS = 5_000;

/**
 * The connection landed on another Redis server (a Sentinel failover): the results the old master took after its
 * replica was promoted are not on the new one. They go out again, said in the log.
 */
async function republishLostResults(publisher: ResultPublisher, logger: Logger): Promise<void> {
  try {
    const jobIds = await publisher.publishAgainIfLost();
    if (jobIds.length > 0) {
      logger.warn(
        { jobIds: jobIds.slice(0, 20), count: jobIds.length },
        'results lost in a Redis failover published again',
      );
    } else {
      logger.info('Redis changed server: no result lost');
    }
  } catch (err) {
    logger.warn({ err }, 'Redis changed server: could not check the latest results');
  }
}

function fatal(logger: Logger, error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  logger.fatal({ err: error }, message);
  // One clear line for a person, whatever the log format.
  process.stderr.write(`worker: ${scrubText(message)}\n`);
  // Under a supervisor, a configuration error says so: it would only restart this child into the same error.
  // One that may pass (Redis or MariaDB still starting, an MCP server down) is retryable: restarted as any exit.
  const lasting = error instanceof ConfigError && !error.retryable;
  process.exit(lasting && process.channel !== undefined ? CONFIG_EXIT_CODE : 1);
}
