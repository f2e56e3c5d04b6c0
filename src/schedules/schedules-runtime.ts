// The schedules side of a process: register the configured schedules, then fire them (enqueue their batch)
// when they come due. Every worker process runs it; so can a dedicated `npm run scheduler`.
import { FlowProducer, Queue, Worker, type KeepJobs } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import type { SpendLedger } from '../fleet/spend-ledger.js';
import type { Logger } from '../logging/logger.js';
import { RedisOutageLog } from '../queue/redis-outage-log.js';
import { SCHEDULES_QUEUE } from '../queue/names.js';
import { loadSchedules } from './schedule-config.js';
import { createScheduleProcessor } from './schedule-processor.js';
import type { BatchInput } from '../batch/batch-schema.js';
import { forecastForEnqueue, storedForecast, type ForecastSettings } from '../batch/forecast.js';
import { CatalogStore } from '../catalog/catalog-store.js';
import { syncSchedules } from './sync-schedules.js';

export interface SchedulesRuntime {
  close(): Promise<void>;
}

export async function startSchedules(options: {
  connection: RedisClient;
  prefix: string;
  file: string;
  ledger: SpendLedger;
  logger: Logger;
  /** Finished firings kept in Redis (the fleet's retention of completed and failed jobs). */
  retention?: { completed: KeepJobs; failed: KeepJobs };
  /** Where Redis errors go (one line per outage); default: a log of its own over `connection`. */
  outages?: RedisOutageLog;
  /** Run history and defaults: each firing's batch is stored with its forecast (docs/batches.md). */
  forecast?: ForecastSettings;
}): Promise<SchedulesRuntime> {
  const { connection, prefix, logger } = options;
  const outages = options.outages ?? new RedisOutageLog(logger).watchConnection(connection);
  const schedules = await loadSchedules(options.file);
  const queue = new Queue(SCHEDULES_QUEUE, { connection, prefix });
  outages.watch(queue, 'schedules queue');
  const report = await syncSchedules(queue, schedules);
  logger.info(
    { schedules: report.registered, removed: report.removed, file: options.file },
    'schedules registered',
  );
  const flow = new FlowProducer({ connection, prefix });
  outages.watch(flow, 'schedules flow');
  const settings = options.forecast;
  const catalogs = new CatalogStore(connection, prefix);
  const forecast = settings
    ? async (batch: BatchInput) => {
        const made = await forecastForEnqueue(settings, batch, await catalogs.latest());
        if (made.error !== null) logger.warn({ reason: made.error }, 'schedule fires without a forecast');
        return made.forecast ? storedForecast(made.forecast) : null;
      }
    : undefined;
  const processor = createScheduleProcessor({
    flow,
    ledger: options.ledger,
    ...(forecast ? { forecast } : {}),
  });
  const worker = new Worker(SCHEDULES_QUEUE, processor, {
    connection,
    prefix,
    concurrency: 1,
    removeOnComplete: options.retention?.completed,
    removeOnFail: options.retention?.failed,
  });
  worker.on('completed', (job, batch) =>
    logger.info({ schedule: job.data.schedule, batchId: batch.batchId }, 'schedule fired'),
  );
  worker.on('failed', (job, err) =>
    logger.error({ schedule: job?.data.schedule, err }, 'schedule could not fire'),
  );
  outages.watch(worker, 'schedule worker');
  return {
    async close() {
      await worker.close();
      await Promise.all([flow.close(), queue.close()]);
    },
  };
}
