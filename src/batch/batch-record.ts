// The batch's row in agent_batches (the report reads it): created when its first task starts, completed by
// the aggregator with the summary. Both writes are idempotent.
import type { Pool } from 'mysql2/promise';
import type { BatchJobData } from './batch-schema.js';
import type { BatchSummary } from './batch-summary.js';

export class BatchRecords {
  constructor(private readonly pool: Pool) {}

  async ensure(batch: BatchJobData): Promise<void> {
    await this.pool.query(
      `INSERT IGNORE INTO agent_batches (batch_id, name, tasks, job_ids, max_cost_usd, max_tokens, state, created_at,
         forecast)
       VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
      [
        batch.batchId,
        batch.name,
        batch.jobIds.length,
        JSON.stringify(batch.jobIds),
        batch.budget?.maxCostUsd ?? null,
        batch.budget?.maxTokens ?? null,
        new Date(batch.createdAt),
        batch.forecast ? JSON.stringify(batch.forecast) : null,
      ],
    );
  }

  async complete(batch: BatchJobData, summary: BatchSummary): Promise<void> {
    await this.ensure(batch);
    await this.pool.query(
      `UPDATE agent_batches SET state = 'completed', summary = ?, completed_at = COALESCE(completed_at, ?)
       WHERE batch_id = ?`,
      [JSON.stringify(summary), new Date(), batch.batchId],
    );
  }
}
