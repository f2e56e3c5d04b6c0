// Bull Board over the fleet's queues, behind HTTP Basic auth, with secrets redacted from job data, return
// values and progress. An express app, so tests mount it on an ephemeral port and producers/board.ts on
// BOARD_PORT. The caller owns the queues (and closes them).
//   /          the board, read-only: BOARD_USER's login (and the admin's) can look, not act
//   /admin/    the same board with every action (add, retry, clean, pause, obliterate…), only for the admin
//              login, and only when one is configured
//   /console/  the run console (src/console): runs, a run's timeline, batches; read-only, for either login, when
//              the board is given the store
// Every answer carries the security headers; a state-changing request from another site is refused.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { consoleRouter } from '../src/console/console-router.js';
import type { ConsoleStore } from '../src/console/console-store.js';
import { CONSOLE_PATH } from '../src/console/pages/layout.js';
import { redactValue } from '../src/logging/redact.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../src/queue/names.js';
import { noExternalResources } from './board-offline.js';
import { safeEqual } from './http-api.js';
import { sameOriginGuard } from './same-origin-guard.js';
import { BOARD_CSP, securityHeaders } from './security-headers.js';

export const BOARD_REALM = 'agent-fleet';
export { REDACTED } from '../src/logging/redact.js';
/** A realm of its own, so a browser asks for the admin login instead of reusing the read-only one. */
export const BOARD_ADMIN_REALM = 'agent-fleet-admin';
export const ADMIN_PATH = '/admin';

export interface BoardLogin {
  user: string;
  password: string;
}

export interface BoardAppOptions {
  queues: readonly Queue[];
  /** The read-only login. */
  user: string;
  password: string;
  /** The login of the admin board under /admin; without it there is no admin board. */
  admin?: BoardLogin;
  /** The board's origin as browsers see it (BOARD_ORIGIN); default: the request's Host. */
  origin?: string;
  /** Shown as the board's title. */
  title?: string;
  /** The fleet's store, read by the run console at /console; without it there is no console. */
  console?: ConsoleStore;
}

/**
 * A copy of `value` with every secret hidden, by the same rules as the logs (src/logging/redact.ts): values
 * under keys that name a secret at any depth, credentials inside strings. Counts such as `maxTokens` stay.
 */
export function redactSecrets(value: unknown): unknown {
  return redactValue(value);
}

function matches(givenUser: string, givenPassword: string, login: BoardLogin): boolean {
  // Both comparisons always run, so timing tells nothing about which half was wrong.
  const userOk = safeEqual(givenUser, login.user);
  const passwordOk = safeEqual(givenPassword, login.password);
  return userOk && passwordOk;
}

/** Lets through a request carrying one of `logins`; every login is compared, whichever matches. */
function basicAuth(logins: readonly BoardLogin[], realm: string): RequestHandler {
  return (req, res, next) => {
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(req.get('authorization') ?? '');
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const givenUser = colon === -1 ? '' : decoded.slice(0, colon);
    const givenPassword = colon === -1 ? '' : decoded.slice(colon + 1);
    const ok = logins.map((login) => matches(givenUser, givenPassword, login)).includes(true);
    if (colon !== -1 && ok) return next();
    res.status(401).set('WWW-Authenticate', `Basic realm="${realm}"`).type('text/plain').send('Unauthorized');
  };
}

/**
 * The read-only board's adapters already refuse every queue and job action (405); this refuses any other
 * state-changing route too (history purge, a route a later Bull Board adds) before Bull Board sees it.
 */
const readOnly: RequestHandler = (req, res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  res
    .status(405)
    .set('Allow', 'GET, HEAD')
    .type('text/plain')
    .send('Method Not Allowed: this login is read-only');
};

const errorHandler: ErrorRequestHandler = (_error, _req, res, _next) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(500).type('text/plain').send('Internal Server Error');
};

/** A task's run page, from its job on agent-tasks or its result job on agent-results (`result-<id>`). */
export function runPageOf(queueName: string, jobId: string | undefined): string | null {
  if (jobId === undefined) return null;
  const id =
    queueName === RESULTS_QUEUE ? jobId.replace(/^result-/, '') : queueName === TASKS_QUEUE ? jobId : null;
  return id ? `${CONSOLE_PATH}/runs/${encodeURIComponent(id)}` : null;
}

function adapterFor(queue: Queue, readOnlyMode: boolean, withConsole: boolean): BullMQAdapter {
  const adapter = new BullMQAdapter(queue, {
    readOnlyMode,
    description: `prefix ${queue.opts.prefix ?? 'bull'}`,
    // Each task job links to its run's timeline in the console.
    ...(withConsole && (queue.name === TASKS_QUEUE || queue.name === RESULTS_QUEUE)
      ? {
          externalJobUrl: (job: { id?: string | number | null | undefined }) => ({
            displayText: 'run timeline',
            href: runPageOf(queue.name, job.id == null ? undefined : String(job.id)) ?? CONSOLE_PATH,
          }),
        }
      : {}),
  });
  // bull-board 9 formatters (FormatterField: 'data' | 'returnValue' | 'name' | 'progress'). 'name' is given
  // the whole job JSON, not the name; job names carry no secrets, so it is left alone.
  adapter.setFormatter('data', redactSecrets);
  adapter.setFormatter('returnValue', redactSecrets);
  adapter.setFormatter('progress', redactSecrets);
  return adapter;
}

/** Bull Board's own express app (typed any) over `queues`, its page and links under `basePath`. */
function boardRouter(options: BoardAppOptions, basePath: string, readOnlyMode: boolean): Express {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: options.queues.map((queue) => adapterFor(queue, readOnlyMode, options.console !== undefined)),
    serverAdapter,
    options: {
      uiConfig: { boardTitle: `${options.title ?? 'agent-fleet'}${readOnlyMode ? '' : ' (admin)'}` },
    },
  });
  const board = serverAdapter.getRouter() as Express;
  board.disable('x-powered-by');
  return board;
}

/** The read-only board at `/`, the admin board at `/admin/` when an admin login is given. */
export function createBoardApp(options: BoardAppOptions): Express {
  const { user, password, admin } = options;
  if (!user || !password) throw new Error('createBoardApp needs a user and a password');
  if (admin && (!admin.user || !admin.password))
    throw new Error('the admin login needs a user and a password');

  const app = express();
  app.disable('x-powered-by');
  app.use(securityHeaders(BOARD_CSP));
  app.use(sameOriginGuard({ origin: options.origin }));
  if (admin) {
    app.use(
      ADMIN_PATH,
      basicAuth([admin], BOARD_ADMIN_REALM),
      noExternalResources,
      boardRouter(options, ADMIN_PATH, false),
    );
  }
  const viewer: BoardLogin = { user, password };
  app.use(basicAuth(admin ? [viewer, admin] : [viewer], BOARD_REALM), readOnly);
  if (options.console) app.use(CONSOLE_PATH, consoleRouter(options.console));
  app.use('/', noExternalResources, boardRouter(options, '/', true));
  app.use(errorHandler);
  return app;
}
