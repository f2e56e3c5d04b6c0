// `npm run api`: the HTTP producer API (docs/http-api.md) on API_PORT. Refuses to start without API_TOKEN or
// API_TOKENS, except in demo mode (AGENT_FLEET_DEMO=1), where it makes up a token and prints it once. Approvals are
// decided in MYSQL_URL's store, under the name of the token that decided; agents' notes are read and forgotten
// there too. SIGTERM/SIGINT: stop accepting, let
// in-flight requests finish, close the client, exit 0.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { fail, loadConfig, runHttpProcess } from './http-process.js';
import { FleetMetrics } from '../src/metrics/fleet-metrics.js';
import { EVENTS_QUEUE, FLEET_QUEUES, TASKS_QUEUE } from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';
import { RedisOutageLog } from '../src/queue/redis-outage-log.js';
import { StoreResultArchive } from './result-archive.js';
import { FleetClient } from '../src/client/fleet-client.js';
import { createApiServer } from './http-api.js';
import { forecastDefaultsOf } from '../src/batch/forecast.js';
import { startTelemetry } from '../src/telemetry/fleet-telemetry.js';
import { apiTokensOf, DEFAULT_TOKEN_NAME, type ApiToken } from '../config/api-tokens.js';
import { redisClientOptionsOf, redisTargetOf } from '../config/env.js';
import { StoreApprovalDesk } from './store-approval-desk.js';
import { StoreNotes } from './store-notes.js';

const logger = createLogger('api');
logCrashes(logger, 'api');

const config = loadConfig(logger);

/** API_TOKEN and API_TOKENS; in demo mode without either, one made up and printed once. */
function tokensOrDemo(): ApiToken[] {
  let tokens: ApiToken[];
  try {
    tokens = apiTokensOf(config);
  } catch (error) {
    return fail(logger, error instanceof Error ? error.message : String(error));
  }
  if (tokens.length > 0) return tokens;
  if (process.env['AGENT_FLEET_DEMO'] !== '1') {
    fail(
      logger,
      'API_TOKEN and API_TOKENS are not set: the API refuses to start without one (set AGENT_FLEET_DEMO=1 for a demo token)',
    );
  }
  const token = randomBytes(24).toString('base64url');
  // Printed for the person starting the demo, past the logger: logs never carry a token, so it would hide it.
  process.stderr.write(
    `demo mode: API_TOKEN is not set, so this is the demo token: Authorization: Bearer ${token}\n`,
  );
  logger.info('demo mode: API_TOKEN is not set; a demo token was made up and printed on stderr');
  return [{ name: DEFAULT_TOKEN_NAME, token }];
}
const tokens = tokensOrDemo();

// Tasks and batches past the Redis retention are answered from the store.
// Tasks and batches past the Redis retention, and the forecasts' history: MYSQL_READ_URL when set.
const archive = new StoreResultArchive(config);
// One warning per Redis outage and one line when it ends, for every connection and queue of the process.
const outages = new RedisOutageLog(logger);
// Each enqueue is a span when an OTLP endpoint is configured; the worker's run continues its trace.
const telemetry = await startTelemetry({ serviceName: 'agent-fleet-api', logger }).catch((error: unknown) =>
  fail(logger, error instanceof Error ? error.message : String(error)),
);
const client = new FleetClient({
  ...redisClientOptionsOf(config),
  prefix: config.QUEUE_PREFIX,
  outages,
  archive,
  // Batches are enqueued with their forecast, and ?dryRun=true answers it: history from the same store.
  forecast: { history: archive, defaults: forecastDefaultsOf(config) },
  ...(telemetry ? { telemetry: telemetry.bullmq } : {}),
});
// The API reports the depth of every queue of the fleet on /metrics.
const metricsRedis = createRedis(redisTargetOf(config), 'producer');
outages.watchConnection(metricsRedis, 'metrics redis');
const watched = FLEET_QUEUES.map(
  (name) => new Queue(name, { connection: metricsRedis, prefix: config.QUEUE_PREFIX }),
);
for (const queue of watched) outages.watch(queue, 'metrics queue');
const metrics = new FleetMetrics();
metrics.watchQueues(watched);
// Decisions wake parked jobs on the tasks queue and publish on the events queue: the watched ones, whose
// connection is the process's own (a BullMQ Queue only adds and moves jobs on it).
const queueNamed = (name: string) => watched.find((queue) => queue.name === name)!;
const approvals = new StoreApprovalDesk({
  mysqlUrl: config.MYSQL_URL,
  tasks: queueNamed(TASKS_QUEUE),
  events: queueNamed(EVENTS_QUEUE),
  logger,
});
// The calls waiting for a decision, fleet-wide, on /metrics: read through the desk's pool on each scrape.
metrics.watchApprovals(approvals);
// The notes agents keep across tasks, listed and forgotten in the same store.
const notes = new StoreNotes(config.MYSQL_URL);
runHttpProcess({
  logger,
  app: createApiServer({ client, tokens, logger, metrics, approvals, notes }),
  host: config.API_HOST,
  port: config.API_PORT,
  hostVariable: 'API_HOST',
  portVariable: 'API_PORT',
  listening: (url) => ({
    // The tokens' names, never the tokens: who may call, as decisions will name them.
    fields: { queuePrefix: config.QUEUE_PREFIX, callers: tokens.map((token) => token.name) },
    message: `API listening on ${url}`,
  }),
  release: async () => {
    await client.close();
    await archive.close();
    await approvals.close();
    await notes.close();
    await Promise.all(watched.map((queue) => queue.close()));
    metricsRedis.disconnect();
    await telemetry?.shutdown();
  },
});
