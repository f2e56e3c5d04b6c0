// Wiring of a worker process: configuration, logger, store, Redis, tools, model, the BullMQ worker and
// its signals. Kept apart from the entry file so the demo can start workers in-process.
import { Queue, Worker } from 'bullmq';
import { env as readEnv, type Env } from '../../config/env.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { scrubText } from '../logging/redact.js';
import { BATCHES_QUEUE, RESULTS_QUEUE, TASKS_QUEUE } from '../queue/names.js';
import { BatchRecords } from '../batch/batch-record.js';
import { BatchReportStore } from '../reports/report-store.js';
import { createBatchAggregator } from './batch-aggregator.js';
import { BatchTracker } from './batch-tracker.js';
import { fleetLimitsFromEnv, gateForJob } from '../fleet/fleet-gate.js';
import { TenantSlots } from '../fleet/tenant-slots.js';
import { withProviderRateLimits } from '../fleet/provider-rate-limits.js';
import type { ChatModel, ModelApi } from '../kernel/chat-model.js';
import { FleetMetrics } from '../metrics/fleet-metrics.js';
import { startMetricsServer, type MetricsServer } from '../metrics/metrics-server.js';
import { assertRedisReachable, createRedis } from '../queue/redis.js';
import { RedisOutageLog } from '../queue/redis-outage-log.js';
import { retentionFrom } from '../queue/retention.js';
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
import { modelFactoryFrom } from './model-factory.js';
import { ResultPublisher } from './result-publisher.js';
import { ResultsRetention } from './results-retention.js';
import { handleShutdownSignals } from './shutdown-signals.js';
import type { Fleet } from '../kernel/define-fleet.js';
import { loadFleetConfig } from './fleet-config.js';
import { openFleet } from './fleet-runtime.js';
import { publishCatalog } from './catalog-publisher.js';
import { effectsInFlight } from '../kernel/effects-in-flight.js';
import { settlesWithin } from '../util/with-timeout.js';
import { startTelemetry } from '../telemetry/fleet-telemetry.js';

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
    const pool = await createStorePool(config.MYSQL_URL);
    await migrate(pool, { logger });
    // The effect ledger's own pool: several statements in one query (its SQL only): a reply's claims in one.
    const effectPool = await createStorePool(config.MYSQL_URL, {
      connectionLimit: 5,
      multipleStatements: true,
    });
    const connection = createRedis(config.REDIS_URL, 'worker');
    // One line when Redis goes away and one when it is back, from every queue and connection of the process.
    const outages = new RedisOutageLog(logger).watchConnection(connection);
    await assertRedisReachable(connection, config.REDIS_URL);
    const retention = retentionFrom(config);
    const traced = telemetry ? { telemetry: telemetry.bullmq } : {};
    const results = new Queue(RESULTS_QUEUE, { connection, prefix: config.QUEUE_PREFIX, ...traced });
    const tasksQueue = new Queue(TASKS_QUEUE, { connection, prefix: config.QUEUE_PREFIX, ...traced });
    outages.watch(results, 'results queue').watch(tasksQueue, 'tasks queue');
    // Redis being away is reported by the outage log; the next publish trims again.
    const resultsRetention = new ResultsRetention(results, retention.results, (err) =>
      logger.warn(
        { reason: err instanceof Error ? err.message : String(err) },
        'could not trim agent-results',
      ),
    );
    const metrics = new FleetMetrics();
    metrics.watchQueues([tasksQueue, results]);
    let metricsServer: MetricsServer | undefined;
    if (config.METRICS_PORT > 0) {
      // Several workers on one host share METRICS_PORT: each takes the next free port of the span. A worker
      // with none left does not start: its metrics would be missing with nothing but a log line to say so.
      metricsServer = await startMetricsServer(metrics, {
        host: config.METRICS_HOST,
        port: config.METRICS_PORT,
        span: config.METRICS_PORT_SPAN,
      });
      logger.info(
        { host: config.METRICS_HOST, port: metricsServer.port },
        `metrics on http://${config.METRICS_HOST}:${metricsServer.port}/metrics`,
      );
    }
    const { ledger, limiter, limitRequests, tokens } = fleetLimitsFromEnv(connection, config);
    // After a 429 the whole fleet pauses: the limiter stops model calls, the queue stops handing out jobs.
    const onRateLimited = (ms: number) => {
      logger.warn({ pauseMs: ms }, 'model endpoint answered 429: pausing the fleet');
      tasksQueue
        .rateLimit(ms)
        .catch((err: unknown) => logger.warn({ err }, 'could not rate-limit the queue'));
    };
    // The endpoint's x-ratelimit-* headers pause the fleet before it answers 429.
    const slowedModels = new Map<string, ChatModel>();
    const createLimitedModel = (model: string, api: ModelApi): ChatModel => {
      const key = `${api}\u0000${model}`;
      let chat = slowedModels.get(key);
      if (!chat) {
        chat = withProviderRateLimits(createModel(model, api), {
          pause: (ms) => limiter.pause(ms),
          onSlowDown: (ms, state) => {
            metrics.observeRatePause(model, 'headers');
            logger.debug({ pauseMs: ms, ...state }, 'endpoint rate-limit headers: pausing the fleet');
          },
          onError: (err) => logger.warn({ err }, 'could not pause the fleet'),
        });
        slowedModels.set(key, chat);
      }
      return chat;
    };
    const gateFor = ({ batchId, tenant, model }: JobLimits) =>
      gateForJob({
        ledger,
        limiter,
        limitRequests,
        batchId,
        tenant,
        tokens: tokens.for(model),
        onRateLimited: (ms) => {
          metrics.observeRatePause(model, 'status_429');
          onRateLimited(ms);
        },
        onWaited: (reason, ms) => metrics.observeRateWait(model, reason, ms),
        onError: (err) => logger.warn({ err }, 'spend ledger'),
      });
    const tools = await openFleet(loaded.fleet, {
      store: pool,
      effectStore: effectPool,
      env: config,
      logger,
      onEmailSettled: (outcome) => metrics.observeEmailSettlement(outcome),
    });
    metrics.knowTools(tools.toolList.map((tool) => tool.name));
    const catalog = await publishCatalog(tools, connection, config.QUEUE_PREFIX, logger, metrics);
    const repository = new RunsRepository(pool);
    // The journal's own small pool: several statements in one query, for the SQL it builds itself and nothing else.
    const journalPool = await createStorePool(config.MYSQL_URL, {
      connectionLimit: 2,
      multipleStatements: true,
    });
    const journal = new RunJournal(new RunsRepository(journalPool));
    const batchesQueue = new Queue(BATCHES_QUEUE, { connection, prefix: config.QUEUE_PREFIX });
    outages.watch(batchesQueue, 'batches queue');
    const batchRecords = new BatchRecords(pool);
    const aggregator = new Worker(
      BATCHES_QUEUE,
      createBatchAggregator({
        results,
        records: batchRecords,
        reports: new BatchReportStore(pool),
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
    outages.watch(aggregator, 'batch aggregator');
    const worker = new FleetWorker(
      {
        env: config,
        checkpoints: new CheckpointStore(connection, config.QUEUE_PREFIX),
        outcomes: new OutcomeStore(connection, config.QUEUE_PREFIX),
        redis: connection,
        repository,
        journal,
        publisher: new ResultPublisher(results, {
          keep: retention.results,
          keepFailed: retention.failed,
          onPublished: () => resultsRetention.poke(),
        }),
        tools: tools.tools,
        agents: tools.agents,
        createModel: createLimitedModel,
        gateFor,
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
        batches: new BatchTracker(batchesQueue, batchRecords),
        logger,
        results,
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
      ledger,
      logger,
      retention,
      outages,
      // Firings are stored with their forecast, from this store's run history.
      forecast: { history: new RunHistory(pool), defaults: forecastDefaultsOf(config) },
    });
    worker.start();

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        // Running jobs are handed back through Redis: while it is away, closing would wait for it forever. Past
        // the grace and a margin the worker goes on without them; their locks expire and they resume elsewhere.
        const closing = Promise.all([worker.close(), aggregator.close(), schedules.close()]);
        if (!(await settlesWithin(closing, config.WORKER_SHUTDOWN_GRACE_MS + STOP_MARGIN_MS))) {
          logger.warn(
            'running jobs not handed back in time (Redis unreachable?): they resume after their lock',
          );
        }
        // Runs cancelled at the grace's end may have left a send in flight: it finishes and is recorded first.
        if (effectsInFlight.size > 0) {
          logger.info({ inFlight: effectsInFlight.size }, 'waiting for side effects in flight');
          if (!(await effectsInFlight.settled(config.WORKER_SHUTDOWN_GRACE_MS))) {
            logger.warn({ inFlight: effectsInFlight.size }, 'side effects still in flight at exit');
          }
        }
        catalog.close();
        const closed = settlesWithin(
          (async () => {
            await resultsRetention.close();
            await batchesQueue.close();
            await metricsServer?.close();
            await tasksQueue.close();
            await results.close();
            await tools.close();
            await pool.end();
            await effectPool.end();
            await journalPool.end();
          })(),
          STOP_MARGIN_MS,
        );
        if (!(await closed)) logger.warn('connections not closed in time: leaving them');
        await telemetry?.shutdown();
        connection.disconnect();
        logger.info('worker stopped');
      })());
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

/** What a step of the stop may take beyond its grace before the worker goes on without it. */
const STOP_MARGIN_MS = 5_000;

function fatal(logger: Logger, error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  logger.fatal({ err: error }, message);
  // One clear line for a person, whatever the log format.
  process.stderr.write(`worker: ${scrubText(message)}\n`);
  process.exit(1);
}
