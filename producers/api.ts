// `npm run api`: the HTTP producer API (CONTRACT §5) on API_PORT. Refuses to start without API_TOKEN, except
// in demo mode (AGENT_FLEET_DEMO=1), where it makes up a token and prints it once. SIGTERM/SIGINT: stop
// accepting, let in-flight requests finish, close the client, exit 0.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { fail, loadConfig, runHttpProcess } from './http-process.js';
import { FleetMetrics } from '../src/metrics/fleet-metrics.js';
import { FLEET_QUEUES } from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';
import { FleetClient } from './client.js';
import { createApiServer } from './http-api.js';

const logger = createLogger('api');
logCrashes(logger, 'api');

const config = loadConfig(logger);

let token = config.API_TOKEN;
if (!token) {
  if (process.env['AGENT_FLEET_DEMO'] !== '1') {
    fail(
      logger,
      'API_TOKEN is not set: the API refuses to start without it (set AGENT_FLEET_DEMO=1 for a demo token)',
    );
  }
  token = randomBytes(24).toString('base64url');
  // Printed for the person starting the demo, past the logger: logs never carry a token, so it would hide it.
  process.stderr.write(
    `demo mode: API_TOKEN is not set, so this is the demo token: Authorization: Bearer ${token}\n`,
  );
  logger.info('demo mode: API_TOKEN is not set; a demo token was made up and printed on stderr');
}

const client = new FleetClient({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX });
// The API reports the depth of every queue of the fleet on /metrics.
const metricsRedis = createRedis(config.REDIS_URL, 'producer');
metricsRedis.on('error', () => undefined);
const watched = FLEET_QUEUES.map(
  (name) => new Queue(name, { connection: metricsRedis, prefix: config.QUEUE_PREFIX }),
);
for (const queue of watched) queue.on('error', () => undefined);
const metrics = new FleetMetrics();
metrics.watchQueues(watched);
runHttpProcess({
  logger,
  app: createApiServer({ client, token, logger, metrics }),
  port: config.API_PORT,
  portVariable: 'API_PORT',
  listening: (port) => ({
    fields: { queuePrefix: config.QUEUE_PREFIX },
    message: `API listening on http://127.0.0.1:${port}`,
  }),
  release: async () => {
    await client.close();
    await Promise.all(watched.map((queue) => queue.close()));
    metricsRedis.disconnect();
  },
});
