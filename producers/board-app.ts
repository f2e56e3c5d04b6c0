// Bull Board over the fleet's queues, behind HTTP Basic auth, with secrets redacted from job data, return
// values and progress. An express app, so tests mount it on an ephemeral port and producers/board.ts on
// BOARD_PORT. The caller owns the queues (and closes them).
//   /          the board, read-only: BOARD_USER's login (and the admin's, and the approvers') can look, not act
//   /admin/    the same board with every action (add, retry, clean, pause, obliterate…), only for the admin
//              login, and only when one is configured
//   /console/  the run console (src/console): runs, a run's timeline, batches, approvals, for every login, when
//              the board is given the store; read-only but for one route: POST /console/approvals/:id, an
//              approval's decision, let through for an approver's login (BOARD_APPROVERS) or the admin's only
// Every answer carries the security headers; a state-changing request from another site is refused.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler } from 'express';
import type { ConsoleDesk } from '../src/console/console-desk.js';
import { consoleLoginOf, setConsoleLogin } from '../src/console/console-login.js';
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
  /** The approval desk the console lists and decides through; without it the console shows no approvals. */
  approvals?: ConsoleDesk;
  /** Logins that may decide approvals in the console (BOARD_APPROVERS), besides the admin's. */
  approvers?: readonly BoardLogin[];
}

/** What a login may do outside /admin: look, or look and decide approvals. */
interface Account {
  login: BoardLogin;
  mayDecide: boolean;
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

/**
 * Lets through a request carrying one of `accounts`' logins, and tells the console which one (its name, whether
 * it may decide). Every login is compared, whichever matches.
 */
function basicAuth(accounts: readonly Account[], realm: string): RequestHandler {
  return (req, res, next) => {
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(req.get('authorization') ?? '');
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const givenUser = colon === -1 ? '' : decoded.slice(0, colon);
    const givenPassword = colon === -1 ? '' : decoded.slice(colon + 1);
    const found = accounts.map(({ login }) => matches(givenUser, givenPassword, login)).indexOf(true);
    const account = accounts[found];
    if (colon !== -1 && account) {
      setConsoleLogin(res, { name: account.login.user, mayDecide: account.mayDecide });
      return next();
    }
    res.status(401).set('WWW-Authenticate', `Basic realm="${realm}"`).type('text/plain').send('Unauthorized');
  };
}

const DECISION_ROUTE = new RegExp(`^${CONSOLE_PATH}/approvals/[^/]+$`);

/** The one state-changing route outside /admin: a decision on one approval, posted by the console's form. */
export function isDecisionRoute(req: Request): boolean {
  return req.method === 'POST' && DECISION_ROUTE.test(req.path);
}

/**
 * The read-only board's adapters already refuse every queue and job action (405); this refuses any other
 * state-changing route too (history purge, a route a later Bull Board adds) before Bull Board sees it. With
 * approvals, a decision is let through for a login that may decide, and refused (403) for the others.
 */
function readOnly(withApprovals: boolean): RequestHandler {
  return (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    if (withApprovals && isDecisionRoute(req)) {
      const login = consoleLoginOf(res);
      if (login?.mayDecide) return next();
      res
        .status(403)
        .type('text/plain')
        .send(
          `Forbidden: ${login?.name ?? 'this login'} can see approvals but not decide them (an approver's login of BOARD_APPROVERS, or the admin login, can)`,
        );
      return;
    }
    res
      .status(405)
      .set('Allow', 'GET, HEAD')
      .type('text/plain')
      .send('Method Not Allowed: this login is read-only');
  };
}

/**
 * The console's pages: `same-origin` instead of the board's `no-referrer`, which makes a browser send
 * `Origin: null` with a form post, refused by the same-origin guard. Other sites are still told nothing.
 */
const consoleReferrerPolicy: RequestHandler = (_req, res, next) => {
  res.set('Referrer-Policy', 'same-origin');
  next();
};

const errorHandler: ErrorRequestHandler = (
  error: { status?: unknown; expose?: unknown },
  _req,
  res,
  _next,
) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A client's mistake the body parser caught (a form too large, malformed): its own status and words.
  const status = typeof error.status === 'number' ? error.status : 500;
  if (status >= 400 && status < 500 && error.expose === true) {
    res
      .status(status)
      .type('text/plain')
      .send(String((error as Partial<Error>).message ?? 'Bad Request'));
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
  const { user, password, admin, approvers = [] } = options;
  if (!user || !password) throw new Error('createBoardApp needs a user and a password');
  if (admin && (!admin.user || !admin.password))
    throw new Error('the admin login needs a user and a password');
  if (approvers.some((approver) => !approver.user || !approver.password))
    throw new Error('an approver login needs a user and a password');
  const withApprovals = options.console !== undefined && options.approvals !== undefined;

  const app = express();
  app.disable('x-powered-by');
  app.use(securityHeaders(BOARD_CSP));
  app.use(
    sameOriginGuard({ origin: options.origin, formRoute: withApprovals ? isDecisionRoute : undefined }),
  );
  if (admin) {
    app.use(
      ADMIN_PATH,
      basicAuth([{ login: admin, mayDecide: true }], BOARD_ADMIN_REALM),
      noExternalResources,
      boardRouter(options, ADMIN_PATH, false),
    );
  }
  // The viewer first: should an approver share its credentials by mistake, the request may only look.
  const accounts: Account[] = [
    { login: { user, password }, mayDecide: false },
    ...(admin ? [{ login: admin, mayDecide: true }] : []),
    ...approvers.map((login) => ({ login, mayDecide: true })),
  ];
  app.use(basicAuth(accounts, BOARD_REALM), readOnly(withApprovals));
  if (options.console) {
    const approvals = withApprovals ? { approvals: options.approvals } : {};
    app.use(CONSOLE_PATH, consoleReferrerPolicy, consoleRouter(options.console, approvals));
  }
  app.use('/', noExternalResources, boardRouter(options, '/', true));
  app.use(errorHandler);
  return app;
}
