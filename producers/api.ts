// `npm run api`: the HTTP producer API (CONTRACT §5) on API_PORT. Refuses to start without API_TOKEN, except
// in demo mode (AGENT_FLEET_DEMO=1), where it makes up a token and logs it once. SIGTERM/SIGINT: stop
// accepting, let in-flight requests finish, close the client, exit 0.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { env, type Env } from '../config/env.js';
import { Queue } from 'bullmq';
import { createLogger } from '../src/logging/logger.js';
import { FleetMetrics } from '../src/metrics/fleet-metrics.js';
import { FLEET_QUEUES } from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';
import { FleetClient } from './client.js';
import { createApiServer } from './http-api.js';

const SHUTDOWN_GRACE_MS = 10_000;

const logger = createLogger('api');

function fail(message: string): never {
  logger.fatal(message);
  logger.flush();
  process.exit(1);
}

function loadConfig(): Env {
  try {
    return env();
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
}

const config = loadConfig();

let token = config.API_TOKEN;
if (!token) {
  if (process.env['AGENT_FLEET_DEMO'] !== '1') {
    fail(
      'API_TOKEN is not set: the API refuses to start without it (set AGENT_FLEET_DEMO=1 for a demo token)',
    );
  }
  token = randomBytes(24).toString('base64url');
  logger.info(`demo mode: API_TOKEN is not set, so this is the demo token: Authorization: Bearer ${token}`);
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
const server = createServer(createApiServer({ client, token, logger, metrics }));
server.keepAliveTimeout = 5_000;

server.once('error', (error) => fail(`cannot listen on API_PORT=${config.API_PORT}: ${error.message}`));
server.listen(config.API_PORT, () => {
  const { port } = server.address() as AddressInfo;
  logger.info({ port, queuePrefix: config.QUEUE_PREFIX }, `API listening on http://127.0.0.1:${port}`);
});

let stopping = false;
async function shutdown(signal: NodeJS.Signals): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  const force = setTimeout(() => {
    logger.warn('requests still open after the grace period; closing them');
    server.closeAllConnections();
  }, SHUTDOWN_GRACE_MS);
  force.unref();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  clearTimeout(force);
  await client.close();
  await Promise.all(watched.map((queue) => queue.close()));
  metricsRedis.disconnect();
  logger.info('stopped');
  logger.flush();
  process.exit(0);
}

process.once('SIGTERM', (signal) => void shutdown(signal));
process.once('SIGINT', (signal) => void shutdown(signal));
