// Registers the configured schedules with BullMQ's job schedulers. Upserting by name is idempotent, so every
// worker and scheduler process can do it at start, at once, and each schedule still exists once; a schedule
// gone from the file is removed, so the file stays the source of truth.
import { ErrorCode, type Queue } from 'bullmq';
import { sleep } from '../kernel/sleep.js';
import type { BatchInput } from '../batch/batch-schema.js';
import type { Schedule } from './schedule-config.js';

export const SCHEDULED_JOB_NAME = 'scheduled-batch';

/** What a schedule's job carries when it fires. */
export interface ScheduledBatchData {
  schedule: string;
  batch: BatchInput;
}

export interface SyncReport {
  registered: string[];
  removed: string[];
}

export async function syncSchedules(queue: Queue, schedules: readonly Schedule[]): Promise<SyncReport> {
  for (const schedule of schedules) {
    const data: ScheduledBatchData = { schedule: schedule.name, batch: schedule.batch };
    await upsertOnce(queue, schedule, data);
  }
  const wanted = new Set(schedules.map((s) => s.name));
  const removed: string[] = [];
  for (const existing of await queue.getJobSchedulers(0, -1)) {
    const id = existing.key;
    if (wanted.has(id)) continue;
    await queue.removeJobScheduler(id);
    removed.push(id);
  }
  return { registered: [...wanted], removed };
}

/**
 * Upserts one schedule. Two processes starting together can race in BullMQ's script: the loser is told that the
 * next firing's job already exists, which means the other process registered it; asking once more settles it.
 */
async function upsertOnce(queue: Queue, schedule: Schedule, data: ScheduledBatchData): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await upsert(queue, schedule, data);
      return;
    } catch (error) {
      const raced =
        error instanceof Error && (error as { code?: unknown }).code === ErrorCode.SchedulerJobIdCollision;
      if (!raced || attempt >= 3) throw error;
      await sleep(50 * attempt);
    }
  }
}

async function upsert(queue: Queue, schedule: Schedule, data: ScheduledBatchData): Promise<void> {
  await queue.upsertJobScheduler(
    schedule.name,
    { pattern: schedule.cron, tz: schedule.timezone },
    {
      name: SCHEDULED_JOB_NAME,
      data,
      opts: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
    },
  );
}
