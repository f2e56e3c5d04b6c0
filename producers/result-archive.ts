// Results and batch summaries read from MySQL, for readers that outlive the Redis retention: a task or a
// batch whose jobs are gone from Redis (RESULTS_KEEP_*, TASKS_KEEP_*) is still answered from the store. It also
// answers the run history a batch forecast reads (src/batch/forecast.ts), over the same pool.
// It reads through the store's read pool (src/store/read-pool.ts): MYSQL_READ_URL's replica when set, which
// may lag: a run just finished is still in Redis, where readers find it first.
// The pool is made on first use, so a process that never needs it never connects; a failed attempt is
// forgotten, so the next read tries again.
import type { Pool } from 'mysql2/promise';
import type { AgentResult } from '../src/kernel/types.js';
import type { BatchSummary } from '../src/batch/batch-summary.js';
import { BatchReportStore } from '../src/reports/report-store.js';
import { createReadPool, type ReadStoreConfig } from '../src/store/read-pool.js';
import { resultOfRun } from '../src/store/run-result.js';
import { RunsRepository } from '../src/store/runs-repository.js';
import { RunHistory, type CostHistory } from '../src/store/run-history.js';
import type { CostHistorySource } from '../src/batch/forecast.js';
import type { ArchivedBatch, ResultArchive } from '../src/client/result-archive-port.js';

export type { ArchivedBatch, ResultArchive } from '../src/client/result-archive-port.js';

export class StoreResultArchive implements ResultArchive, CostHistorySource {
  private pool: Promise<Pool> | undefined;

  /** MYSQL_URL, or the environment (its MYSQL_READ_URL, when set, is read instead). */
  constructor(private readonly store: ReadStoreConfig | string) {}

  async getResult(jobId: string): Promise<AgentResult | null> {
    const run = await new RunsRepository(await this.connect()).getRun(jobId);
    return run ? resultOfRun(run) : null;
  }

  async getBatch(batchId: string): Promise<ArchivedBatch | null> {
    const loaded = await new BatchReportStore(await this.connect()).loadBatch(batchId);
    if (!loaded) return null;
    const { batch } = loaded;
    return {
      state: batch.state === 'completed' ? 'completed' : 'running',
      summary: (batch.summary as BatchSummary | null) ?? null,
      jobIds: [...batch.jobIds],
    };
  }

  async costHistory(agent: string, model: string, since: Date): Promise<CostHistory> {
    return new RunHistory(await this.connect()).costHistory(agent, model, since);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await (await pool.catch(() => undefined))?.end();
  }

  private connect(): Promise<Pool> {
    this.pool ??= createReadPool(this.store, { connectionLimit: 2, connectTimeout: 3_000 }).catch(
      (error: unknown) => {
        this.pool = undefined;
        throw error;
      },
    );
    return this.pool;
  }
}
