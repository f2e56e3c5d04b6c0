// A batch's optional budget, shared by all its tasks: a module of its own so that the batch schema and the
// forecast (which caps its sums by it, and which the schema's stored batch holds) both import it and not each other.
import { z } from 'zod';

export const batchBudgetSchema = z
  .object({
    maxCostUsd: z.number().positive().max(100_000).optional(),
    maxTokens: z.number().int().min(100).max(10_000_000_000).optional(),
  })
  .strict();

export type BatchBudget = z.infer<typeof batchBudgetSchema>;
