// `npm run board`: Bull Board for every queue of the fleet (QUEUE_PREFIX) on BOARD_HOST:BOARD_PORT, behind HTTP
// Basic auth. Refuses to start without BOARD_USER and BOARD_PASSWORD, except in demo mode (AGENT_FLEET_DEMO=1),
// where the user is `admin` and the password is made up and printed once (not logged). That login is read-only; the board's
// actions are under /admin/ for BOARD_ADMIN_USER / BOARD_ADMIN_PASSWORD, and only when both are set. The run
// console's approvals are decided by the logins of BOARD_APPROVERS (and the admin's), through the approval desk.
// SIGTERM/SIGINT: close, exit 0.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { logCrashes } from '../src/logging/log-crashes.js';
import { createLogger } from '../src/logging/logger.js';
import { fail, loadConfig, runHttpProcess } from './http-process.js';
import { EVENTS_QUEUE, FLEET_QUEUES, TASKS_QUEUE } from '../src/queue/names.js';
import { createRedis } from '../src/queue/redis.js';
import { redisTargetOf } from '../config/env.js';
import { RedisOutageLog } from '../src/queue/redis-outage-log.js';
import { ConsoleStore } from '../src/console/console-store.js';
import { createReadPool, readStoreOf } from '../src/store/read-pool.js';
import { ADMIN_PATH, createBoardApp, type BoardLogin } from './board-app.js';
import { StoreApprovalDesk } from './store-approval-desk.js';

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

/** The admin login, or none: half of one is a mistake worth stopping for. */
function adminLogin(): BoardLogin | undefined {
  const adminUser = config.BOARD_ADMIN_USER;
  const adminPassword = config.BOARD_ADMIN_PASSWORD;
  if (!adminUser && !adminPassword) return undefined;
  if (!adminUser || !adminPassword) {
    const missing = adminUser ? 'BOARD_ADMIN_PASSWORD' : 'BOARD_ADMIN_USER';
    fail(
      logger,
      `${missing} not set: the board's admin login needs both BOARD_ADMIN_USER and BOARD_ADMIN_PASSWORD`,
    );
  }
  if (adminUser === user && adminPassword === password) {
    fail(logger, 'BOARD_ADMIN_PASSWORD must differ from BOARD_PASSWORD: the admin login is a separate one');
  }
  return { user: adminUser, password: adminPassword };
}

const admin = adminLogin();

/** BOARD_APPROVERS, each with a name of its own: `console:<name>` must say which person decided. */
function approverLogins(): BoardLogin[] {
  const approvers = config.BOARD_APPROVERS ?? [];
  for (const { user: name } of approvers) {
    const taken = name === user ? 'BOARD_USER' : name === admin?.user ? 'BOARD_ADMIN_USER' : null;
    if (taken) {
      fail(
        logger,
        `BOARD_APPROVERS=(hidden) is invalid: "${name}" is ${taken}'s name; each login needs its own`,
      );
    }
  }
  return approvers;
}

const approvers = approverLogins();

// The board is long-lived: its connection keeps reconnecting through a Redis restart (the producer role gives
// up after a few tries), and its pages wait for Redis instead of failing while it is away.
const redis = createRedis(redisTargetOf(config), 'worker');
const outages = new RedisOutageLog(logger).watchConnection(redis);
const queues = FLEET_QUEUES.map((name) => {
  const queue = new Queue(name, { connection: redis, prefix: config.QUEUE_PREFIX });
  outages.watch(queue, `${name} queue`);
  return queue;
});
const queueNamed = (name: string): Queue => queues.find((queue) => queue.name === name)!;

// The run console reads the fleet's store through a pool of its own, made on its first page: MYSQL_READ_URL's
// replica when set, else MYSQL_URL (src/store/read-pool.ts). Approvals are decided on MYSQL_URL, below.
const consoleStore = new ConsoleStore(() => createReadPool(config, { connectionLimit: 2 }), {
  replica: readStoreOf(config).replica,
});
// Approvals are read and decided through the desk the API uses: a decision wakes its parked job on agent-tasks and
// publishes approval.decided on agent-events, whoever made it. Its pool, too, is made on first use.
const approvals = new StoreApprovalDesk({
  mysqlUrl: config.MYSQL_URL,
  tasks: queueNamed(TASKS_QUEUE),
  events: queueNamed(EVENTS_QUEUE),
  logger,
});

runHttpProcess({
  logger,
  app: createBoardApp({
    queues,
    user,
    password,
    admin,
    approvers,
    origin: config.BOARD_ORIGIN,
    console: consoleStore,
    approvals,
  }),
  host: config.BOARD_HOST,
  port: config.BOARD_PORT,
  hostVariable: 'BOARD_HOST',
  portVariable: 'BOARD_PORT',
  listening: (url) => ({
    fields: {
      queuePrefix: config.QUEUE_PREFIX,
      queues: FLEET_QUEUES,
      admin: admin !== undefined,
      approvers: approvers.length,
    },
    message: `board listening on ${url}/ (read-only${admin ? `; admin board on ${url}${ADMIN_PATH}/` : ''})`,
  }),
  release: async () => {
    await Promise.allSettled([
      ...queues.map((queue) => queue.close()),
      consoleStore.close(),
      approvals.close(),
    ]);
    redis.disconnect();
  },
});
