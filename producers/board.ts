// `npm run board`: Bull Board for every queue of the fleet (QUEUE_PREFIX) on BOARD_PORT, behind HTTP Basic
// auth. Refuses to start without BOARD_USER and BOARD_PASSWORD, except in demo mode (AGENT_FLEET_DEMO=1),
// where the user is `admin` and the password is made up and printed once (not logged). SIGTERM/SIGINT: close, exit 0.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { fail, loadConfig, runHttpProcess } from './http-process.js';
import { FLEET_QUEUES } from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';
import { createBoardApp } from './board-app.js';

const logger = createLogger('board');
logCrashes(logger, 'board');

const config = loadConfig(logger);

function credentials(): { user: string; password: string } {
  const user = config.BOARD_USER;
  const password = config.BOARD_PASSWORD;
  if (user && password) return { user, password };
  if (process.env['AGENT_FLEET_DEMO'] !== '1') {
    const missing = [user ? null : 'BOARD_USER', password ? null : 'BOARD_PASSWORD']
      .filter(Boolean)
      .join(' and ');
    fail(
      logger,
      `${missing} not set: the board refuses to start without a login (set AGENT_FLEET_DEMO=1 for a demo one)`,
    );
  }
  const demoUser = user ?? 'admin';
  if (password) return { user: demoUser, password };
  const demoPassword = randomBytes(18).toString('base64url');
  // Printed for the person starting the demo, past the logger: logs never carry a password.
  process.stderr.write(
    `demo mode: BOARD_PASSWORD is not set, so the demo login is user ${demoUser}, password ${demoPassword}\n`,
  );
  logger.info('demo mode: BOARD_PASSWORD is not set; a demo password was made up and printed on stderr');
  return { user: demoUser, password: demoPassword };
}

const { user, password } = credentials();

// The board is long-lived: its connection keeps reconnecting through a Redis restart (the producer role gives
// up after a few tries), and its pages wait for Redis instead of failing while it is away.
const redis = createRedis(config.REDIS_URL, 'worker');
redis.on('error', (error) => logger.warn({ reason: error.message }, 'redis connection error'));
const queues = FLEET_QUEUES.map((name) => {
  const queue = new Queue(name, { connection: redis, prefix: config.QUEUE_PREFIX });
  queue.on('error', (error) => logger.warn({ queue: name, reason: error.message }, 'queue error'));
  return queue;
});

runHttpProcess({
  logger,
  app: createBoardApp({ queues, user, password }),
  port: config.BOARD_PORT,
  portVariable: 'BOARD_PORT',
  listening: (port) => ({
    fields: { queuePrefix: config.QUEUE_PREFIX, queues: FLEET_QUEUES },
    message: `board listening on http://127.0.0.1:${port}/`,
  }),
  release: async () => {
    await Promise.allSettled(queues.map((queue) => queue.close()));
    redis.disconnect();
  },
});
