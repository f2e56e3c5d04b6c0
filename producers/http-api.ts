// The HTTP producer API as an express app, so tests mount it on an ephemeral port and producers/api.ts on
// API_PORT. Every answer is JSON and carries the security headers; no error ever carries a stack trace. A body's
// keys and depth are counted on its raw bytes before it is parsed (json-structure.ts).
// Routes, errors and Idempotency-Key: docs/http-api.md#routes (and producers/openapi.ts, the document).
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { ConfigError, StoreError } from '../src/kernel/errors.js';
import type { Logger } from '../src/logging/logger.js';
import type { FleetMetrics } from '../src/metrics/fleet-metrics.js';
import { metricsHandler } from '../src/metrics/metrics-server.js';
import { BATCH_JSON_LIMITS } from '../src/batch/batch-schema.js';
import { TASK_JSON_LIMITS, JsonStructureError } from '../src/queue/json-structure.js';
import { TaskValidationError, type FleetClient } from '../src/client/fleet-client.js';
import { IDEMPOTENCY_HEADER, withIdempotencyHeader } from './idempotency-header.js';
import { buildOpenApiDocument } from './openapi.js';
import { API_CSP, securityHeaders } from './security-headers.js';
import { batchDryRun } from './batch-dry-run.js';
import { withTimeout } from '../src/util/with-timeout.js';
import { DEFAULT_TOKEN_NAME, type ApiToken } from '../config/api-tokens.js';
import { bearerAuth } from './bearer-auth.js';
import { BODY_LIMIT_BYTES, jsonBody, requireJson } from './json-body.js';
import { approvalsRouter, type ApprovalsDesk } from './approvals-routes.js';
import { cancelTaskRoute } from './cancel-route.js';
import { notesRouter, type NotesDesk } from './notes-routes.js';
import type { ApprovalState } from '../src/approvals/approval.js';

export { BODY_LIMIT_BYTES };
// The board compares its logins with it (board-app.ts).
export { safeEqual } from './bearer-auth.js';
export const BATCH_BODY_LIMIT_BYTES = 8 * 1024 * 1024;
const MAX_JOB_ID_CHARS = 256;
const HEALTH_TIMEOUT_MS = 2_000;

export interface ApiServerOptions {
  client: FleetClient;
  /** A bearer token every /v1 request may carry, named `api` (API_TOKEN). */
  token?: string;
  /** Named tokens (API_TOKENS), besides `token`: who called is the name of the one given. At least one of the two. */
  tokens?: readonly ApiToken[];
  /** Decides approvals (the /v1/approvals routes); without it they answer 503. */
  approvals?: ApprovalsDesk;
  /** Lists and forgets agents' notes (the /v1/notes routes); without it they answer 503. */
  notes?: NotesDesk;
  logger: Logger;
  /** Served at GET /metrics, behind the token like /v1; not served when absent. */
  metrics?: FleetMetrics;
  /** Resolves when Redis answers. Default: a read through the client. */
  healthCheck?: () => Promise<unknown>;
}

function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    // req.path: no query string, and headers (Authorization) are never logged.
    const { method, path } = req;
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10;
      const status = res.writableFinished ? res.statusCode : 499;
      logger.info({ method, path, status, ms }, `${method} ${path} ${status} ${ms}ms`);
    };
    res.once('finish', log);
    res.once('close', log);
    next();
  };
}

interface BodyParserError {
  type?: unknown;
  status?: unknown;
  limit?: unknown;
}

const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  next();
};

function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const parser = (typeof error === 'object' && error !== null ? error : {}) as BodyParserError;
    let status = 500;
    let body: Record<string, string> = { error: 'internal' };
    if (parser.type === 'entity.too.large') {
      status = 413;
      const limit = typeof parser.limit === 'number' ? parser.limit : BODY_LIMIT_BYTES;
      body = { error: 'payload_too_large', message: `the body must be at most ${limit} bytes` };
    } else if (error instanceof JsonStructureError) {
      status = 400;
      body = { error: 'too_complex', message: error.message };
    } else if (parser.type === 'entity.parse.failed') {
      status = 400;
      body = { error: 'invalid_json', message: 'the body is not a JSON object' };
    } else if (parser.type === 'encoding.unsupported' || parser.type === 'charset.unsupported') {
      status = 415;
      body = { error: 'unsupported_media_type', message: 'the body must be UTF-8 JSON' };
    } else if (typeof parser.status === 'number' && parser.status >= 400 && parser.status < 500) {
      status = parser.status;
      body = { error: 'bad_request' };
    } else if (error instanceof ConfigError || (error instanceof StoreError && error.retryable)) {
      // Redis or the store unreachable: the message names REDIS_URL or MYSQL_URL (a URL's password hidden); the
      // caller only learns to try again later.
      status = 503;
      body = { error: 'unavailable' };
      logger.warn(
        { method: req.method, path: req.path, reason: error.message },
        'redis or store unavailable',
      );
    } else {
      logger.error({ method: req.method, path: req.path, err: error }, 'request failed');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status).json(body);
  };
}

/** The API as an express app; the caller listens, and closes the client on shutdown. */
export function createApiServer(options: ApiServerOptions): Express {
  const { client, logger } = options;
  const tokens = [
    ...(options.token ? [{ name: DEFAULT_TOKEN_NAME, token: options.token }] : []),
    ...(options.tokens ?? []),
  ];
  if (tokens.length === 0) throw new Error('createApiServer needs a token');
  // Redis alone, as documented: the archive's store (MYSQL_READ_URL's replica, say) down leaves the API up.
  const healthCheck = options.healthCheck ?? (() => client.ping());

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(securityHeaders(API_CSP), noStore);
  // Queue depths and spend are the operator's business: /metrics asks for the token too.
  if (options.metrics) app.get('/metrics', bearerAuth(tokens), metricsHandler(options.metrics));
  app.use(requestLog(logger));

  // The document describes routes, never data: served without the token, like the health check.
  const openApi = buildOpenApiDocument();
  app.get('/openapi.json', (_req, res) => {
    res.json(openApi);
  });

  app.get('/healthz', async (_req, res) => {
    try {
      await withTimeout(healthCheck(), HEALTH_TIMEOUT_MS);
      res.json({ status: 'ok' });
    } catch (error) {
      logger.warn({ reason: error instanceof Error ? error.message : String(error) }, 'health check failed');
      res.status(503).json({ status: 'unavailable' });
    }
  });

  // Authenticate before reading any body: an unauthenticated request is never parsed, let alone enqueued.
  const v1 = express.Router();
  v1.use(bearerAuth(tokens));

  v1.post('/tasks', requireJson, jsonBody(BODY_LIMIT_BYTES, TASK_JSON_LIMITS), async (req, res) => {
    const keyed = withIdempotencyHeader(req.get(IDEMPOTENCY_HEADER), req.body);
    if (!keyed.ok) {
      res.status(400).json({ error: 'invalid_task', issues: keyed.issues });
      return;
    }
    try {
      const { jobId } = await client.enqueue(keyed.body);
      res.status(202).json({ jobId });
    } catch (error) {
      if (!(error instanceof TaskValidationError)) throw error;
      res.status(400).json({ error: 'invalid_task', issues: error.issues });
    }
  });

  // The catalog the workers serve: what a task may name (agents, their tools, input schemas, budget ceilings).
  v1.get('/agents', async (_req, res) => {
    const catalog = await client.getCatalog();
    res.json(catalog ?? { hash: null, agents: [] });
  });

  v1.get('/tasks/:jobId', async (req, res) => {
    const jobId = req.params['jobId'] ?? '';
    if (jobId.length === 0 || jobId.length > MAX_JOB_ID_CHARS) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    const status = await client.getTask(jobId);
    if (status.state === 'unknown') {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    res.json({ state: status.state, progress: status.progress, result: status.result });
  });

  // Stops a task wherever it is: waiting, running on any worker, parked (cancel-route.ts, docs/cancelling.md).
  v1.post('/tasks/:jobId/cancel', cancelTaskRoute(client));

  // ?dryRun=true answers the batch's forecast, enqueuing nothing (batch-dry-run.ts); any other request goes on to
  // the route below, whose body parser sees the body already read and passes.
  v1.post(
    '/batches',
    requireJson,
    jsonBody(BATCH_BODY_LIMIT_BYTES, BATCH_JSON_LIMITS),
    batchDryRun(client, logger),
  );
  // A batch of 5,000 tasks of 8,000 characters would not fit the task limit: batches get their own.
  v1.post('/batches', requireJson, jsonBody(BATCH_BODY_LIMIT_BYTES, BATCH_JSON_LIMITS), async (req, res) => {
    // A batch has no idempotency key yet: ignoring the header would let a retried request enqueue it twice.
    if (req.get(IDEMPOTENCY_HEADER) !== undefined) {
      const message =
        'header: batches take no idempotency key; send the batch once, or per task to /v1/tasks';
      res.status(400).json({ error: 'invalid_batch', issues: [{ path: IDEMPOTENCY_HEADER, message }] });
      return;
    }
    try {
      const { batchId, jobIds } = await client.enqueueBatch(req.body);
      res.status(202).json({ batchId, jobIds });
    } catch (error) {
      if (!(error instanceof TaskValidationError)) throw error;
      res.status(400).json({ error: 'invalid_batch', issues: error.issues });
    }
  });

  v1.get('/batches/:batchId', async (req, res) => {
    const batchId = req.params['batchId'] ?? '';
    const status =
      batchId.length > 0 && batchId.length <= MAX_JOB_ID_CHARS ? await client.getBatch(batchId) : null;
    if (!status) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    const approvals = await batchApprovals(options.approvals, batchId, logger);
    res.json({
      state: status.state,
      summary: status.summary,
      jobIds: status.jobIds,
      ...(approvals ? { approvals } : {}),
    });
  });

  // Listing, reading and deciding approvals (approvals-routes.ts), behind the same token check.
  v1.use(approvalsRouter(options.approvals));
  // The notes agents keep across tasks, as `npm run memory` shows them (notes-routes.ts).
  v1.use(notesRouter(options.notes));

  app.use('/v1', v1);
  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found' });
  });
  app.use(errorHandler(logger));
  return app;
}

/** A batch's approvals by state, or nothing when the store cannot say now: the batch's status does not wait on it. */
async function batchApprovals(
  desk: ApprovalsDesk | undefined,
  batchId: string,
  logger: Logger,
): Promise<Record<ApprovalState, number> | undefined> {
  if (!desk) return undefined;
  try {
    return await withTimeout(desk.countsForBatch(batchId), HEALTH_TIMEOUT_MS);
  } catch (error) {
    logger.warn({ reason: error instanceof Error ? error.message : String(error) }, 'batch approvals unread');
    return undefined;
  }
}
