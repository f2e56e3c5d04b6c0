// When a schedule fires, its job enqueues the schedule's batch. The batch id is derived from the schedule and
// the fire time, so a retried firing enqueues the same batch (BullMQ ignores a second job with the same id)
// instead of a second one.
import { UnrecoverableError, type FlowProducer, type Job, type Processor } from 'bullmq';
import { validateBatch, type BatchInput } from '../batch/batch-schema.js';
import type { StoredForecast } from '../batch/forecast.js';
import { enqueueBatch, type EnqueuedBatch } from '../batch/enqueue-batch.js';
import type { SpendLedger } from '../fleet/spend-ledger.js';
import { formatFieldIssues } from '../queue/task-schema.js';
import type { ScheduledBatchData } from './sync-schedules.js';

/**
 * The time the schedule fired for, not the time a worker got to it: job schedulers name their jobs
 * `repeat:<scheduler>:<millis>`; a late or retried firing keeps its name.
 */
function firedAt(job: Job): number {
  const millis = /:(\d{10,})$/.exec(String(job.id))?.[1];
  return millis ? Number(millis) : job.timestamp + (job.opts.delay ?? 0);
}

export function firingBatchId(schedule: string, firedAt: number): string {
  const stamp = new Date(firedAt).toISOString().slice(0, 16).replace(/[-:T]/g, '');
  return `${schedule}-${stamp}`;
}

export function createScheduleProcessor(deps: {
  flow: FlowProducer;
  ledger: SpendLedger;
  /** The forecast a firing's batch is stored with (docs/batches.md); none when absent or null. */
  forecast?: (batch: BatchInput) => Promise<StoredForecast | null>;
}): Processor<ScheduledBatchData, EnqueuedBatch> {
  return async (job: Job<ScheduledBatchData>) => {
    const validation = validateBatch(job.data.batch);
    if (!validation.ok)
      throw new UnrecoverableError(`schedule ${job.data.schedule}: ${formatFieldIssues(validation.issues)}`);
    const batchId = firingBatchId(job.data.schedule, firedAt(job));
    // Enqueuing the same firing twice (a retried job) adds nothing: the parent and its children have fixed ids.
    const batch = { ...validation.batch, name: validation.batch.name ?? job.data.schedule };
    return enqueueBatch(deps, batch, batchId, (await deps.forecast?.(batch)) ?? null);
  };
}
