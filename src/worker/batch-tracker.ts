// Makes sure a batch has its row in agent_batches as soon as one of its tasks starts, so the report can be
// read while the batch runs. The batch's data comes from its parent job.
import type { Queue } from 'bullmq';
import type { BatchRecords } from '../batch/batch-record.js';
import type { BatchJobData } from '../batch/batch-schema.js';

export class BatchTracker {
  private readonly known = new Set<string>();

  constructor(
    private readonly batches: Queue,
    private readonly records: BatchRecords,
  ) {}

  async noteTask(batchId: string): Promise<void> {
    if (this.known.has(batchId)) return;
    const parent = await this.batches.getJob(batchId);
    // A task may name a batch nobody enqueued as a flow (metadata set by hand): nothing to record.
    if (!parent) return;
    await this.records.ensure(parent.data as BatchJobData);
    this.known.add(batchId);
  }
}
