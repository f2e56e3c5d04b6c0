// `npm run scheduler`: registers the schedules of SCHEDULES_FILE and fires them when due, without running
// agent tasks (every worker process does this too; a dedicated scheduler is for fleets that want one).
import { env, redisTargetOf } from '../config/env.js';
import { fleetLimitsFromEnv } from '../src/fleet/fleet-gate.js';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { scrubText } from '../src/logging/redact.js';
import { assertRedisReachable, createRedis } from '../src/queue/redis.js';
import { retentionFrom } from '../src/queue/retention.js';
import { startSchedules } from '../src/schedules/schedules-runtime.js';
import { handleShutdownSignals } from '../src/worker/shutdown-signals.js';

const logger = createLogger('scheduler');
logCrashes(logger, 'scheduler');
try {
  const config = env();
  const connection = createRedis(redisTargetOf(config), 'worker');
  await assertRedisReachable(connection, redisTargetOf(config));
  const { ledger } = fleetLimitsFromEnv(connection, config);
  const runtime = await startSchedules({
    connection,
    prefix: config.QUEUE_PREFIX,
    file: config.SCHEDULES_FILE,
    ledger,
    logger,
    retention: retentionFrom(config),
  });
  logger.info('scheduler started');
  handleShutdownSignals({
    logger,
    stop: async () => {
      await runtime.close();
      connection.disconnect();
      logger.info('scheduler stopped');
    },
  });
} catch (error) {
  process.stderr.write(`scheduler: ${scrubText(error instanceof Error ? error.message : String(error))}\n`);
  process.exit(1);
}
