// The parent job of a batch runs once every task of the batch has finished. It sums the tasks' published
// results into the batch summary (docs/tasks-and-results.md), completes the batch's row and stores its report.
import { DelayedError, type Processor, type Queue } from 'bullmq';
import type { BatchRecords } from '../batch/batch-record.js';
import type { BatchJobData } from '../batch/batch-schema.js';
import { summarizeBatch, type BatchSummary } from '../batch/batch-summary.js';
import type { AgentResult } from '../kernel/types.js';
import type { Logger } from '../logging/logger.js';
import { resultJobId } from '../queue/names.js';
import { buildBatchReport } from '../reports/batch-summary.js';
import { renderReport } from '../reports/report-command.js';
import type { BatchReportStore } from '../reports/report-store.js';
import { isConnectionFailure } from '../store/mysql-errors.js';
import { resultOfRun } from '../store/run-result.js';

export interface BatchAggregatorDeps {
  results: Queue;
  records: BatchRecords;
  reports: BatchReportStore;
  logger: Logger;
  /**
   * While the store is unreachable, how long the parent waits before it tries again (WORKER_RETRY_BASE_MS).
   * Default 5,000 ms.
   */
  storeRetryMs?: number;
}

/** The published results of the batch's tasks, in batch order; null for a task whose result is not out yet. */
export async function batchResults(
  results: Queue,
  jobIds: readonly string[],
): Promise<(AgentResult | null)[]> {
  const jobs = await Promise.all(jobIds.map((id) => results.getJob(resultJobId(id))));
  return jobs.map((job) => (job?.data as AgentResult | undefined) ?? null);
}

/**
 * Results no longer on agent-results (a batch larger than RESULTS_KEEP_COUNT, an aggregation late past
 * RESULTS_KEEP_AGE_S) are read from the store, where every result is recorded before it is published.
 */
async function fillFromStore(
  reports: BatchReportStore,
  batchId: string,
  jobIds: readonly string[],
  results: (AgentResult | null)[],
): Promise<(AgentResult | null)[]> {
  if (!results.includes(null)) return results;
  const loaded = await reports.loadBatch(batchId);
  const runs = new Map((loaded?.runs ?? []).map((run) => [run.jobId, run]));
  return results.map((result, i) => {
    const run = runs.get(jobIds[i]!);
    return result ?? (run ? resultOfRun(run) : null);
  });
}

export function createBatchAggregator(deps: BatchAggregatorDeps): Processor<BatchJobData, BatchSummary> {
  const aggregate = aggregateWith(deps);
  // Batches of this process waiting for the store: one line when a batch starts waiting, not one per try.
  const waiting = new Set<string>();
  return async (job, token) => {
    try {
      const summary = await aggregate(job);
      waiting.delete(job.data.batchId);
      return summary;
    } catch (error) {
      if (!isConnectionFailure(error) || token === undefined) throw error;
      // The store is down: waiting for it spends no attempt, so an outage of any length never fails the batch
      // for good (its tasks are all recorded; only the summary and the report wait).
      const delayMs = deps.storeRetryMs ?? 5_000;
      if (!waiting.has(job.data.batchId)) {
        waiting.add(job.data.batchId);
        deps.logger.warn(
          { batchId: job.data.batchId, retryInMs: delayMs, reason: (error as Error).message },
          'batch waits for the store',
        );
      }
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
  };
}

function aggregateWith(deps: BatchAggregatorDeps) {
  return async (job: { data: BatchJobData }): Promise<BatchSummary> => {
    const batch = job.data;
    const log = deps.logger.child({ batchId: batch.batchId });
    const published = await batchResults(deps.results, batch.jobIds);
    const results = await fillFromStore(deps.reports, batch.batchId, batch.jobIds, published);
    const missing = results.filter((result) => result === null).length;
    // A task that failed for good is released to the parent before its result is published (the worker's
    // failed handler publishes it): the attempt is retried until every result is out.
    if (missing > 0) throw new Error(`waiting for the results of ${missing} of ${batch.jobIds.length} tasks`);
    const summary = summarizeBatch(batch.batchId, batch.jobIds.length, results as AgentResult[]);
    await deps.records.complete(batch, summary);
    const loaded = await deps.reports.loadBatch(batch.batchId);
    if (loaded) {
      const { emails, approvals } = loaded;
      const rendered = renderReport(buildBatchReport(loaded.batch, loaded.runs, { emails, approvals }));
      await deps.reports.saveReport({
        batchId: batch.batchId,
        state: rendered.report.state,
        summary: rendered.report.summary,
        markdown: rendered.markdown,
        html: rendered.html,
      });
    }
    log.info({ summary }, 'batch completed');
    return summary;
  };
}
