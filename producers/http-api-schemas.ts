// What the HTTP API answers besides tasks and batches (src/client/status-schemas.ts), as zod schemas for the
// OpenAPI document: its error bodies, the health check and the agents' catalog.
import { z } from 'zod';
import { catalogSchema } from '../src/catalog/catalog.js';

/** Every `error` an answer of the API may carry (producers/http-api.ts). */
export const API_ERROR_CODES = [
  'invalid_task',
  'invalid_batch',
  'invalid_json',
  'too_complex',
  'bad_request',
  'unauthorized',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'unavailable',
  'internal',
  // A bad query parameter (POST /v1/batches?dryRun=…, GET /v1/approvals, GET and DELETE /v1/notes); no run history
  // to forecast from (batch-dry-run.ts)
  'invalid_query',
  'forecast_unavailable',
  // POST /v1/approvals/:id and /v1/batches/:batchId/approvals: a refused decision; a call decided before (409)
  'invalid_decision',
  'already_decided',
  // POST /v1/tasks/:jobId/cancel: the task had finished (409)
  'already_finished',
] as const;

export const fieldIssueSchema = z
  .object({
    path: z.string().describe('the field, dotted (`budget.maxSteps`, `tasks.3.task`), or a header name'),
    message: z.string(),
  })
  .describe('One refused field.');

export const apiErrorSchema = z
  .looseObject({
    error: z.enum(API_ERROR_CODES),
    message: z.string().optional(),
    issues: z
      .array(fieldIssueSchema)
      .optional()
      .describe('invalid_task, invalid_batch, invalid_decision and invalid_query: every refused field'),
  })
  .describe('An error: branch on `error`; never a stack trace.');

export const healthSchema = z.looseObject({ status: z.enum(['ok', 'unavailable']) });

/** The catalog the workers publish, or none yet (no worker has started). */
export const agentsSchema = z
  .union([catalogSchema, z.looseObject({ hash: z.null(), agents: z.array(z.never()).max(0) })])
  .describe(
    'The agents the workers serve, with their tools and the JSON Schemas of their inputs and outputs.',
  );
