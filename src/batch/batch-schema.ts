// A batch (docs/tasks-and-results.md): tasks run as one unit, with an optional budget shared by all of them.
import { z } from 'zod';
import { MAX_OBJECT_KEYS, snapshotJson, type JsonLimits } from '../queue/json-structure.js';
import {
  PARENT_ONLY_BY_FLEET,
  safeParse,
  taskSchema,
  toFieldIssues,
  type FieldIssue,
} from '../queue/task-schema.js';
import { batchBudgetSchema, type BatchBudget } from './batch-budget.js';
import { APPROVAL_POLICIES } from '../kernel/approval.js';
import type { StoredForecast } from './forecast.js';

export { batchBudgetSchema, type BatchBudget } from './batch-budget.js';

export const MAX_BATCH_TASKS = 5_000;

/** 40 keys and array items per task on average (a task with a budget, four tools and a few metadata has 15). */
export const BATCH_JSON_LIMITS: JsonLimits = {
  maxDepth: 32,
  maxMembers: MAX_BATCH_TASKS * 40,
  maxObjectKeys: MAX_OBJECT_KEYS,
};

export const batchSchema = z
  .object({
    tasks: z.array(taskSchema).min(1, 'must hold at least one task').max(MAX_BATCH_TASKS),
    budget: batchBudgetSchema.optional(),
    name: z.string().min(1).max(200).optional(),
    /** Every task of the batch asks for this tier, unless it names one itself. */
    serviceTier: z.enum(['default', 'flex']).optional(),
    /** Every task of the batch has this approval policy, unless it names one itself (docs/approvals.md). */
    approval: z.enum(APPROVAL_POLICIES).optional(),
  })
  .strict();

export type BatchInput = z.infer<typeof batchSchema>;

export type BatchValidation = { ok: true; batch: BatchInput } | { ok: false; issues: FieldIssue[] };

/** Never throws (see validateTask). */
export function validateBatch(input: unknown): BatchValidation {
  const snapshot = snapshotJson(input, BATCH_JSON_LIMITS);
  if (!snapshot.ok) return { ok: false, issues: [snapshot.issue] };
  const parsed = safeParse(batchSchema, snapshot.value);
  if (!parsed.success) return { ok: false, issues: toFieldIssues(parsed.error.issues) };
  // The fleet sets `parent` on a child agent's task only: a batch's tasks are a producer's.
  const claimed = parsed.data.tasks.flatMap((task, i) =>
    task.parent === undefined ? [] : [{ path: `tasks.${i}.parent`, message: PARENT_ONLY_BY_FLEET }],
  );
  return claimed.length > 0 ? { ok: false, issues: claimed } : { ok: true, batch: parsed.data };
}

/** The data of a batch's parent job. */
export interface BatchJobData {
  batchId: string;
  name: string | null;
  jobIds: string[];
  budget: BatchBudget | null;
  createdAt: string;
  /** The forecast made at enqueue (src/batch/forecast.ts), stored with the batch; absent when none was made. */
  forecast?: StoredForecast | null;
}
