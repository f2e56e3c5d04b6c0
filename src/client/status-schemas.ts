// What the client and the HTTP API answer about tasks and batches, as zod schemas: the OpenAPI document is
// generated from them and other services may parse answers with them. Loose objects: fields are only ever added.
import { z } from 'zod';
import { agentResultSchema } from '../kernel/result-schema.js';
import { batchSummarySchema } from '../batch/batch-summary-schema.js';
import type { BatchStatus, TaskStatus } from './fleet-client.js';
import { agree, type Known, type Same } from '../util/schema-agreement.js';

/**
 * BullMQ's job states, `awaiting_approval` for a delayed job parked until a person decides on a call of it
 * (docs/approvals.md), and `unknown` for a job Redis does not hold (the API answers 404 for it instead).
 */
export const JOB_STATES = [
  'waiting',
  'waiting-children',
  'prioritized',
  'delayed',
  'awaiting_approval',
  'active',
  'completed',
  'failed',
  'unknown',
] as const;

export const taskStatusSchema = z
  .looseObject({
    state: z.enum(JOB_STATES),
    progress: z.unknown().describe('the latest step of the run while it goes (null before the first)'),
    result: agentResultSchema.nullable(),
  })
  .describe('A task: its job state, its progress and its result once published.');

export const batchStatusSchema = z
  .looseObject({
    state: z.enum(['running', 'completed', 'failed']),
    summary: batchSummarySchema,
    jobIds: z.array(z.string()),
    approvals: z
      .object({ pending: z.number(), approved: z.number(), rejected: z.number(), expired: z.number() })
      .describe("the batch's calls by approval state (the HTTP API, when it can read the store)")
      .optional(),
  })
  .describe('A batch: running until every task has finished; the summary is over the tasks finished so far.');

export const cancellingTaskSchema = z
  .looseObject({
    jobId: z.string(),
    state: z.enum(JOB_STATES).describe('the task’s state as the cancel found it'),
    cancelling: z.literal(true),
    children: z.number().int().min(0).describe('unfinished child agents cancelled with it, at every depth'),
  })
  .describe(
    'The cancel is recorded: the task ends with `status: "stopped"`, `stopReason: "cancelled"` (docs/cancelling.md).',
  );

export const cancelConflictSchema = z
  .looseObject({
    error: z.literal('already_finished'),
    state: z.enum(JOB_STATES),
    result: agentResultSchema.nullable(),
  })
  .describe('The task had finished: nothing was cancelled.');

export const enqueuedTaskSchema = z.looseObject({ jobId: z.string() }).describe('The job of the task.');

export const enqueuedBatchSchema = z
  .looseObject({ batchId: z.string(), jobIds: z.array(z.string()) })
  .describe('The batch and the jobs of its tasks, in the order of the tasks.');

// The schemas and the client's types describe the same JSON: a field added to one alone fails the type check.
agree<Same<Known<z.infer<typeof taskStatusSchema>>['state'], TaskStatus['state']>>();
agree<Same<Omit<Known<z.infer<typeof taskStatusSchema>>, 'result'>, Omit<TaskStatus, 'result'>>>();
agree<Same<Omit<Known<z.infer<typeof batchStatusSchema>>, 'summary'>, Omit<BatchStatus, 'summary'>>>();
