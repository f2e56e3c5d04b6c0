// The component schemas of the OpenAPI document (openapi.ts), by name: the zod schemas the API validates and
// answers with, converted once by zod's toJSONSchema so references between them are `#/components/schemas/<name>`.
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
import {
  batchStatusSchema,
  cancelConflictSchema,
  cancellingTaskSchema,
  enqueuedBatchSchema,
  enqueuedTaskSchema,
  taskStatusSchema,
} from '../src/client/status-schemas.js';
import {
  approvalConflictSchema,
  approvalListSchema,
  approvalSchema,
  batchDecidedSchema,
  batchDecisionBodySchema,
  decisionBodySchema,
} from '../src/client/approval-schemas.js';
import { noteListSchema, noteSchema, notesForgottenSchema } from '../src/client/note-schemas.js';
import type { JsonObject } from './openapi-parts.js';

/** The components, by name: every schema the paths name is one of these. */
export const COMPONENTS: Record<string, z.ZodType> = {
  Task: taskSchema,
  TaskBudget: budgetSchema,
  Batch: batchSchema,
  BatchBudget: batchBudgetSchema,
  EnqueuedTask: enqueuedTaskSchema,
  EnqueuedBatch: enqueuedBatchSchema,
  TaskStatus: taskStatusSchema,
  CancellingTask: cancellingTaskSchema,
  CancelConflict: cancelConflictSchema,
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
  Approval: approvalSchema,
  Approvals: approvalListSchema,
  ApprovalDecision: decisionBodySchema,
  ApprovalConflict: approvalConflictSchema,
  BatchApprovalDecision: batchDecisionBodySchema,
  BatchApprovalsDecided: batchDecidedSchema,
  Note: noteSchema,
  Notes: noteListSchema,
  NotesForgotten: notesForgottenSchema,
};

export function componentSchemas(): Record<string, JsonObject> {
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
