// The HTTP API's OpenAPI 3.1 document, generated from the zod schemas the API validates and answers with, so it
// cannot drift from them: served at GET /openapi.json and committed as docs/openapi.json (`npm run openapi`
// writes it; test/integration/producers/openapi.test.ts fails when the committed one is stale, and checks real answers of every
// route against it).
import { z } from 'zod';
import {
  agentResultSchema,
  runErrorSchema,
  uncertainEffectSchema,
  usageSchema,
} from '../src/kernel/result-schema.js';
import { batchSummarySchema } from '../src/batch/batch-summary-schema.js';
import { batchBudgetSchema, batchSchema } from '../src/batch/batch-schema.js';
import { budgetSchema, idempotencyKeySchema, taskSchema } from '../src/queue/task-schema.js';
import { agentsSchema, apiErrorSchema, fieldIssueSchema, healthSchema } from './http-api-schemas.js';
import { IDEMPOTENCY_HEADER } from './idempotency-header.js';
import {
  batchStatusSchema,
  enqueuedBatchSchema,
  enqueuedTaskSchema,
  taskStatusSchema,
} from '../src/client/status-schemas.js';

export type JsonObject = Record<string, unknown>;

/** The components, by name: every schema the paths name is one of these. */
const COMPONENTS: Record<string, z.ZodType> = {
  Task: taskSchema,
  TaskBudget: budgetSchema,
  Batch: batchSchema,
  BatchBudget: batchBudgetSchema,
  EnqueuedTask: enqueuedTaskSchema,
  EnqueuedBatch: enqueuedBatchSchema,
  TaskStatus: taskStatusSchema,
  BatchStatus: batchStatusSchema,
  AgentResult: agentResultSchema,
  Usage: usageSchema,
  RunError: runErrorSchema,
  UncertainEffect: uncertainEffectSchema,
  BatchSummary: batchSummarySchema,
  Agents: agentsSchema,
  Health: healthSchema,
  Error: apiErrorSchema,
  FieldIssue: fieldIssueSchema,
  IdempotencyKey: idempotencyKeySchema,
};

type ComponentName = keyof typeof COMPONENTS;

const ref = (name: ComponentName) => ({ $ref: `#/components/schemas/${name}` });

function componentSchemas(): Record<string, JsonObject> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    uri: (id) => `#/components/schemas/${id}`,
    // What the API reads and what it answers, after parsing: `metadata` as the record it is checked as.
    io: 'output',
    unrepresentable: 'any',
  }) as { schemas: Record<string, JsonObject> };
  // OpenAPI 3.1's dialect is 2020-12 already; an `$id` per component would re-base the references inside it.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]),
  );
}

function json(schema: JsonObject, description: string): JsonObject {
  return { description, content: { 'application/json': { schema } } };
}

const error = (description: string) => json(ref('Error'), description);

/** What every /v1 route may also answer. */
const V1_ERRORS = {
  '401': error('No token, or a wrong one (`unauthorized`); nothing was read or enqueued.'),
  '500': error('An unexpected failure (`internal`); the details are in the API’s log, never here.'),
  '503': error('Redis is unreachable (`unavailable`): try again later.'),
};

const BODY_ERRORS = {
  '413': error('The body is over the size limit (`payload_too_large`).'),
  '415': error('The body is not UTF-8 JSON (`unsupported_media_type`).'),
};

function pathParameter(name: string, description: string): JsonObject {
  return {
    name,
    in: 'path',
    required: true,
    description,
    schema: { type: 'string', minLength: 1, maxLength: 256 },
  };
}

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
    tags: [{ name: 'tasks' }, { name: 'batches' }, { name: 'agents' }, { name: 'operations' }],
    paths: paths(),
    components: {
      securitySchemes: {
        bearerToken: { type: 'http', scheme: 'bearer', description: 'API_TOKEN, compared in constant time.' },
      },
      schemas: componentSchemas(),
    },
  };
}
