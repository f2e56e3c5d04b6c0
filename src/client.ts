// The public client entry (the package's main export and the separate client package): enqueue tasks and
// batches, read results, decide approvals and list or forget agents' notes over the HTTP API (FleetApprovals,
// FleetNotes), and the zod schemas of the formats.
// It reaches bullmq, ioredis and zod only (test/unit/packaging/client-imports.test.ts checks it); the client
// itself lives in src/client/fleet-client.ts, the approvals client in src/client/approvals-api.ts, the notes
// client in src/client/notes-api.ts.
export {
  FleetClient,
  TaskValidationError,
  type BatchStatus,
  type CancelOutcome,
  type FleetClientOptions,
  type OutageWatch,
  type TaskStatus,
  type WaitOptions,
} from './client/fleet-client.js';
export type { ArchivedBatch, ResultArchive } from './client/result-archive-port.js';
export {
  ApprovalConflictError,
  ApprovalNotFoundError,
  ApprovalRefusedError,
  FleetApiAuthError,
  FleetApiError,
  FleetApprovals,
  type ApprovalListFilter,
  type ApprovalView,
  type FleetApprovalsOptions,
} from './client/approvals-api.js';
export {
  approvalConflictSchema,
  approvalListSchema,
  approvalSchema,
  batchDecidedSchema,
  batchDecisionBodySchema,
  decisionBodySchema,
} from './client/approval-schemas.js';
export type { FleetApiOptions } from './client/fleet-api.js';
export {
  FleetNotes,
  NoteNotFoundError,
  NotesRefusedError,
  type NoteJson,
  type NotesFilter,
} from './client/notes-api.js';
export { noteListSchema, noteSchema, notesForgottenSchema } from './client/note-schemas.js';
export { pendingApprovalsOf, type PendingApprovalCall } from './client/awaiting-approval.js';
export {
  batchStatusSchema,
  enqueuedBatchSchema,
  enqueuedTaskSchema,
  JOB_STATES,
  taskStatusSchema,
} from './client/status-schemas.js';
export {
  budgetSchema,
  MAX_TASK_CHARS,
  taskSchema,
  validateTask,
  type AgentTask,
  type FieldIssue,
  type TaskBudget,
  type TaskValidation,
} from './queue/task-schema.js';
export {
  batchBudgetSchema,
  batchSchema,
  MAX_BATCH_TASKS,
  validateBatch,
  type BatchBudget,
  type BatchInput,
  type BatchValidation,
} from './batch/batch-schema.js';
export {
  agentResultSchema,
  runErrorSchema,
  uncertainEffectSchema,
  usageSchema,
} from './kernel/result-schema.js';
export { batchSummarySchema } from './batch/batch-summary-schema.js';
export type { BatchSummary } from './batch/batch-summary.js';
export type { EnqueuedBatch } from './batch/enqueue-batch.js';
export type { AgentResult, RunStatus, StopReason, UncertainEffect } from './kernel/types.js';
export type { RunError } from './kernel/errors.js';
export type { Usage } from './kernel/budget.js';
export type { Catalog, CatalogAgent, CatalogTool } from './catalog/catalog.js';
