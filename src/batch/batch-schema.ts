// A batch (CONTRACT §9): tasks run as one unit, with an optional budget shared by all of them.
import { z } from 'zod';
import { taskSchema, toFieldIssues, type FieldIssue } from '../queue/task-schema.js';

export const MAX_BATCH_TASKS = 5_000;

export const batchBudgetSchema = z
  .object({
    maxCostUsd: z.number().positive().max(100_000).optional(),
    maxTokens: z.number().int().min(100).max(10_000_000_000).optional(),
  })
  .strict();

export const batchSchema = z
  .object({
    tasks: z.array(taskSchema).min(1, 'must hold at least one task').max(MAX_BATCH_TASKS),
    budget: batchBudgetSchema.optional(),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();

export type BatchInput = z.infer<typeof batchSchema>;
export type BatchBudget = z.infer<typeof batchBudgetSchema>;

export type BatchValidation = { ok: true; batch: BatchInput } | { ok: false; issues: FieldIssue[] };

export function validateBatch(input: unknown): BatchValidation {
  const parsed = batchSchema.safeParse(input);
  return parsed.success
    ? { ok: true, batch: parsed.data }
    : { ok: false, issues: toFieldIssues(parsed.error.issues) };
}

/** The data of a batch's parent job. */
export interface BatchJobData {
  batchId: string;
  name: string | null;
  jobIds: string[];
  budget: BatchBudget | null;
  createdAt: string;
}
