// Enqueues a batch as one BullMQ flow: a parent job on agent-batches whose children are ordinary task jobs
// on agent-tasks. The parent runs when every child has finished (a failed child is ignored, never blocks the
// others) and aggregates their results. The batch's budget is stored in the fleet's spend ledger first, so
// no child can call the model before its cap exists.
import { randomBytes } from 'node:crypto';
import type { FlowProducer } from 'bullmq';
import { batchScope } from '../fleet/spend-scopes.js';
import { type SpendLedger } from '../fleet/spend-ledger.js';
import { TASK_JOB_OPTIONS } from '../queue/job-options.js';
import { BATCH_JOB_NAME, BATCHES_QUEUE, TASKS_QUEUE } from '../queue/names.js';
import { taskJobName } from '../queue/task-job-name.js';
import type { BatchInput, BatchJobData } from './batch-schema.js';
import type { StoredForecast } from './forecast.js';

export interface EnqueuedBatch {
  batchId: string;
  jobIds: string[];
}

/** Batch ids are also job ids and Redis key parts: letters, digits, `-` and `_`. */
export function newBatchId(prefix = 'batch'): string {
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '');
  return `${prefix}-${day}-${randomBytes(4).toString('hex')}`;
}

/** The parent job retries while children's results are still being published (see the aggregator). */
const PARENT_ATTEMPTS = 30;

export async function enqueueBatch(
  deps: { flow: FlowProducer; ledger: SpendLedger },
  batch: BatchInput,
  batchId: string = newBatchId(),
  forecast: StoredForecast | null = null,
): Promise<EnqueuedBatch> {
  const jobIds = batch.tasks.map((_, i) => `${batchId}-${i + 1}`);
  if (batch.budget && (batch.budget.maxCostUsd !== undefined || batch.budget.maxTokens !== undefined)) {
    await deps.ledger.setCaps(batchScope(batchId), batch.budget);
  }
  const data: BatchJobData = {
    batchId,
    name: batch.name ?? null,
    jobIds,
    budget: batch.budget ?? null,
    createdAt: new Date().toISOString(),
    ...(forecast ? { forecast } : {}),
  };
  await deps.flow.add({
    name: BATCH_JOB_NAME,
    queueName: BATCHES_QUEUE,
    data,
    opts: {
      jobId: batchId,
      attempts: PARENT_ATTEMPTS,
      // Retention: the aggregator's (the fleet's results retention), like every queue's.
      backoff: { type: 'fixed', delay: 1_000 },
    },
    children: batch.tasks.map((task, i) => {
      // Every task of a batch carries the batch id; its own idempotency key would name
      // another job, so the position in the batch is the task's identity instead.
      const { idempotencyKey: _ignored, ...rest } = task;
      return {
        name: taskJobName(task),
        queueName: TASKS_QUEUE,
        data: {
          ...rest,
          ...(batch.serviceTier && !rest.serviceTier ? { serviceTier: batch.serviceTier } : {}),
          ...(batch.approval && !rest.approval ? { approval: batch.approval } : {}),
          metadata: { ...task.metadata, batch: batchId },
        },
        opts: { ...TASK_JOB_OPTIONS, jobId: jobIds[i]!, ignoreDependencyOnFailure: true },
      };
    }),
  });
  return { batchId, jobIds };
}
