// The batch summary as a zod schema, for readers in other processes: the client exports it and the
// OpenAPI document is generated from it. Loose, as the result's: fields are added, never removed.
import { z } from 'zod';
import { usageSchema } from '../kernel/result-schema.js';
import type { BatchSummary } from './batch-summary.js';
import { agree, type Known, type Same } from '../util/schema-agreement.js';

const count = z.number().int().min(0);

export const batchSummarySchema = z
  .looseObject({
    batchId: z.string(),
    tasks: count,
    succeeded: count,
    stopped: count,
    failed: count,
    usage: usageSchema,
  })
  .describe('Counts and usage summed over the results of the tasks of the batch.');

// A field added to the summary and not here (or the reverse) fails the type check.
agree<Same<Omit<Known<z.infer<typeof batchSummarySchema>>, 'usage'>, Omit<BatchSummary, 'usage'>>>();
