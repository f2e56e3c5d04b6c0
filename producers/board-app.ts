// Bull Board over the fleet's queues, behind HTTP Basic auth, with secrets redacted from job data, return
// values and progress. An express app, so tests mount it on an ephemeral port and producers/board.ts on
// BOARD_PORT. The caller owns the queues (and closes them).
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { redactValue } from '../src/logging/redact.js';
import { safeEqual } from './http-api.js';

export const BOARD_REALM = 'agent-fleet';
export { REDACTED } from '../src/logging/redact.js';

export interface BoardAppOptions {
  queues: readonly Queue[];
  user: string;
  password: string;
  /** Shown as the board's title. */
  title?: string;
}

/**
 * A copy of `value` with every secret hidden, by the same rules as the logs (src/logging/redact.ts): values
 * under keys that name a secret at any depth, credentials inside strings. Counts such as `maxTokens` stay.
 */
export function redactSecrets(value: unknown): unknown {
  return redactValue(value);
}

function basicAuth(user: string, password: string): RequestHandler {
  return (req, res, next) => {
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(req.get('authorization') ?? '');
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const givenUser = colon === -1 ? '' : decoded.slice(0, colon);
    const givenPassword = colon === -1 ? '' : decoded.slice(colon + 1);
    // Both comparisons always run, so timing tells nothing about which half was wrong.
    const userOk = safeEqual(givenUser, user);
    const passwordOk = safeEqual(givenPassword, password);
    if (colon !== -1 && userOk && passwordOk) return next();
    res
      .status(401)
      .set('WWW-Authenticate', `Basic realm="${BOARD_REALM}"`)
      .type('text/plain')
      .send('Unauthorized');
  };
}

const errorHandler: ErrorRequestHandler = (_error, _req, res, _next) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(500).type('text/plain').send('Internal Server Error');
};

function adapterFor(queue: Queue): BullMQAdapter {
  const adapter = new BullMQAdapter(queue, { description: `prefix ${queue.opts.prefix ?? 'bull'}` });
  // bull-board 9 formatters (FormatterField: 'data' | 'returnValue' | 'name' | 'progress'). 'name' is given
  // the whole job JSON, not the name; job names carry no secrets, so it is left alone.
  adapter.setFormatter('data', redactSecrets);
  adapter.setFormatter('returnValue', redactSecrets);
  adapter.setFormatter('progress', redactSecrets);
  return adapter;
}

/** The board at `/` (UI) and `/api/*` (its JSON API), every route behind Basic auth. */
export function createBoardApp(options: BoardAppOptions): Express {
  const { queues, user, password } = options;
  if (!user || !password) throw new Error('createBoardApp needs a user and a password');

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath('/');
  createBullBoard({
    queues: queues.map(adapterFor),
    serverAdapter,
    options: { uiConfig: { boardTitle: options.title ?? 'agent-fleet' } },
  });

  const app = express();
  app.disable('x-powered-by');
  app.use(basicAuth(user, password));
  // getRouter() is bull-board's own express app (typed any): it answers under our auth and error handler.
  const board = serverAdapter.getRouter() as Express;
  board.disable('x-powered-by');
  app.use('/', board);
  app.use(errorHandler);
  return app;
}
