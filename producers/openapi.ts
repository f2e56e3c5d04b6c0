// The HTTP API's OpenAPI 3.1 document, generated from the zod schemas the API validates and answers with, so it
// cannot drift from them: served at GET /openapi.json and committed as docs/openapi.json (`npm run openapi`
// writes it; test/integration/producers/openapi.test.ts fails when the committed one is stale, and checks real answers of every
// route against it). The components: openapi-components.ts; the approvals' paths: openapi-approvals.ts;
// the notes': openapi-notes.ts.
import { IDEMPOTENCY_HEADER } from './idempotency-header.js';
import { componentSchemas } from './openapi-components.js';
import { approvalPaths } from './openapi-approvals.js';
import { notePaths } from './openapi-notes.js';
import { BODY_ERRORS, error, json, pathParameter, ref, V1_ERRORS, type JsonObject } from './openapi-parts.js';

export type { JsonObject } from './openapi-parts.js';

const idempotencyHeader = {
  name: IDEMPOTENCY_HEADER,
  in: 'header',
  required: false,
  description:
    'The task’s idempotency key (the same as its `idempotencyKey` field): the same key enqueued twice names the ' +
    'same job, which the second request answers without enqueuing anything. Given in both places, they must be ' +
    'equal (else 400 naming `idempotencyKey`).',
  schema: ref('IdempotencyKey'),
};

function paths(): JsonObject {
  return {
    '/v1/tasks': {
      post: {
        operationId: 'enqueueTask',
        summary: 'Enqueue a task',
        tags: ['tasks'],
        parameters: [idempotencyHeader],
        requestBody: { required: true, content: { 'application/json': { schema: ref('Task') } } },
        responses: {
          '202': json(ref('EnqueuedTask'), 'Enqueued (or, for a known idempotency key, already enqueued).'),
          '400': error(
            'A refused task (`invalid_task`, with every refused field in `issues`), a body that is not JSON ' +
              '(`invalid_json`) or over the key and depth limits (`too_complex`). Nothing was enqueued.',
          ),
          ...BODY_ERRORS,
          ...V1_ERRORS,
        },
      },
    },
    '/v1/tasks/{jobId}': {
      get: {
        operationId: 'getTask',
        summary: 'A task’s state, progress and result',
        tags: ['tasks'],
        parameters: [pathParameter('jobId', 'As POST /v1/tasks answered it.')],
        responses: {
          '200': json(ref('TaskStatus'), 'The task; `result` is null until it has finished.'),
          '404': error('No such task (`not_found`), or one past the retention with no store to ask.'),
          ...V1_ERRORS,
        },
      },
    },
    '/v1/tasks/{jobId}/cancel': {
      post: {
        operationId: 'cancelTask',
        summary: 'Cancel a task, and the child agents it started',
        description:
          'Waiting, it never makes a model call; running, its worker stops it at once; parked for approval or for ' +
          'its children, it is woken (its children cancelled too). It then ends as a result like any other, ' +
          '`status: "stopped"`, `stopReason: "cancelled"`, with what it spent and `stopDetail` naming the token ' +
          'that cancelled it. Nothing already done (an email sent) is undone. Takes no body; see docs/cancelling.md.',
        tags: ['tasks'],
        parameters: [pathParameter('jobId', 'As POST /v1/tasks answered it.')],
        responses: {
          '202': json(ref('CancellingTask'), 'The cancel is recorded (a repeat changes nothing).'),
          '404': error('No such task (`not_found`).'),
          '409': json(ref('CancelConflict'), 'The task had finished (`already_finished`), with its result.'),
          ...V1_ERRORS,
        },
      },
    },
    '/v1/batches': {
      post: {
        operationId: 'enqueueBatch',
        summary: 'Enqueue a batch: every task, or none',
        tags: ['batches'],
        parameters: [
          {
            name: 'dryRun',
            in: 'query',
            required: false,
            description:
              '`true`: enqueue nothing and answer the batch cost forecast (per task and in total: the worst case ' +
              'the budgets allow, the expected p50–p90 from recorded runs of the same agent and model); see ' +
              'docs/batches.md. Anything but `true` or `false` is a 400 naming `dryRun`.',
            schema: { type: 'string', enum: ['true', 'false'] },
          },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: ref('Batch') } } },
        responses: {
          '200': json(
            {
              type: 'object',
              required: ['dryRun', 'forecast'],
              properties: {
                dryRun: { const: true },
                forecast: {
                  type: 'object',
                  description:
                    'The forecast of each task and of the batch (docs/batches.md). Nothing was enqueued.',
                },
              },
            },
            'With dryRun=true: the forecast; nothing was enqueued.',
          ),
          '202': json(ref('EnqueuedBatch'), 'Enqueued: the batch id and the job of each task, in order.'),
          '400': error(
            'A refused batch (`invalid_batch`, naming `tasks.<n>.<field>`), a body that is not JSON or over the ' +
              'limits, an Idempotency-Key header (batches take none), or a bad `dryRun`. Nothing was enqueued.',
          ),
          ...BODY_ERRORS,
          ...V1_ERRORS,
        },
      },
    },
    '/v1/batches/{batchId}': {
      get: {
        operationId: 'getBatch',
        summary: 'A batch’s state and its summary so far',
        tags: ['batches'],
        parameters: [pathParameter('batchId', 'As POST /v1/batches answered it.')],
        responses: {
          '200': json(ref('BatchStatus'), 'The batch.'),
          '404': error('No such batch (`not_found`).'),
          ...V1_ERRORS,
        },
      },
    },
    ...approvalPaths(),
    ...notePaths(),
    '/v1/agents': {
      get: {
        operationId: 'listAgents',
        summary: 'The agents the workers serve',
        tags: ['agents'],
        responses: {
          '200': json(ref('Agents'), 'The latest catalog a worker published; `hash: null` before any did.'),
          ...V1_ERRORS,
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'health',
        summary: 'Whether Redis answers',
        tags: ['operations'],
        security: [],
        responses: {
          '200': json(ref('Health'), 'Redis answers.'),
          '503': json(ref('Health'), 'It does not.'),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Queue depths and the fleet’s counters, in the Prometheus text format',
        tags: ['operations'],
        responses: {
          '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': V1_ERRORS['401'],
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document',
        tags: ['operations'],
        security: [],
        responses: { '200': json({ type: 'object' }, 'The OpenAPI 3.1 document of the API.') },
      },
    },
  };
}

export function buildOpenApiDocument(): JsonObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'agent-fleet HTTP API',
      version: '1',
      description:
        'Enqueue agent tasks and batches and read their results from any language. Every answer is JSON (but ' +
        '/metrics); objects may gain fields, never lose one: ignore the ones you do not know. See docs/http-api.md.',
    },
    servers: [{ url: 'http://127.0.0.1:3100', description: 'API_HOST and API_PORT by default' }],
    security: [{ bearerToken: [] }],
    tags: [
      { name: 'tasks' },
      { name: 'batches' },
      { name: 'approvals' },
      { name: 'notes' },
      { name: 'agents' },
      { name: 'operations' },
    ],
    paths: paths(),
    components: {
      securitySchemes: {
        bearerToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'API_TOKEN (named `api`) or one of API_TOKENS (`name:token,…`), compared in constant time; a decision ' +
            'on an approval is recorded under the name of the token that sent it.',
        },
      },
      schemas: componentSchemas(),
    },
  };
}
