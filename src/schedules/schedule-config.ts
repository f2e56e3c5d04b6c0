// Named schedules (overnight batches) live in a JSON file, config/schedules.json by default
// (SCHEDULES_FILE): each a cron pattern with a time zone and the batch it enqueues when it fires.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from '../kernel/errors.js';
import { batchSchema } from '../batch/batch-schema.js';
import { formatFieldIssues, toFieldIssues } from '../queue/task-schema.js';

export const DEFAULT_SCHEDULES_FILE = 'config/schedules.json';

/** A cron pattern of 5 fields (minute first) or 6 (seconds first), as BullMQ's cron parser reads them. */
const cronPattern = z
  .string()
  .regex(/^\S+( \S+){4,5}$/, 'must be a cron pattern of 5 or 6 fields, e.g. "0 2 * * *"');

const timeZone = z.string().refine((zone) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}, 'must be an IANA time zone, e.g. "Europe/Berlin"');

export const scheduleSchema = z
  .object({
    // A firing's batch id is `<name>-<yyyymmddhhmm>`, and batch ids have at most 64 characters.
    name: z.string().regex(/^[A-Za-z0-9_-]{1,51}$/, 'letters, digits, _ and - only, at most 51'),
    cron: cronPattern,
    timezone: timeZone.default('UTC'),
    batch: batchSchema,
  })
  .strict();

export const schedulesFileSchema = z
  .object({ schedules: z.array(scheduleSchema) })
  .strict()
  .refine((file) => new Set(file.schedules.map((s) => s.name)).size === file.schedules.length, {
    message: 'schedule names must be unique',
    path: ['schedules'],
  });

export type Schedule = z.infer<typeof scheduleSchema>;

/** Reads and validates the schedules file; a missing file means no schedules. Errors name the field. */
export async function loadSchedules(path: string = DEFAULT_SCHEDULES_FILE): Promise<Schedule[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('bad_schedules', `${path} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = schedulesFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      'bad_schedules',
      `${path}: ${formatFieldIssues(toFieldIssues(parsed.error.issues))}`,
    );
  }
  return parsed.data.schedules;
}
