// The batch summary (CONTRACT §9) as a zod schema, for readers in other processes: the client exports it and the
// OpenAPI document is generated from it. Loose, as the result's: fields are added, never removed.
import { z } from 'zod';
import { usageSchema } from '../agent/result-schema.js';
import type { BatchSummary } from './batch-summary.js';

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

type Known<T> = { [K in keyof T as string extends K ? never : K]: T[K] };
// Equal types with equal keys: an optional field added to one side only is a difference too.
type Same<A, B> = [A] extends [B]
  ? [B] extends [A]
    ? [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false
    : false
  : false;
// A field added to the summary and not here (or the reverse) fails the type check.
const agree = <T extends true>(): T | undefined => undefined;
agree<Same<Omit<Known<z.infer<typeof batchSummarySchema>>, 'usage'>, Omit<BatchSummary, 'usage'>>>();
