// Publishes a result (docs/tasks-and-results.md) on agent-results exactly once: the result job's id derives from the task's,
// and BullMQ ignores an add whose id already exists, so a retried or resumed job can publish again safely.
// The result job carries the fleet's results retention, applied when a consumer completes (or fails) it.
import type { KeepJobs, Queue } from 'bullmq';
import type { AgentResult } from '../kernel/types.js';
import { RESULT_JOB_NAME, resultJobId } from '../queue/names.js';
import { retentionFrom } from '../queue/retention.js';

export interface ResultPublisherOptions {
  /** Default: the default results retention. */
  keep?: KeepJobs;
  /** Default: the default failed-job retention. */
  keepFailed?: KeepJobs;
  /** Called after each publish, e.g. to trim results nobody consumes. */
  onPublished?: () => void;
}

export class ResultPublisher {
  private readonly keep: KeepJobs;
  private readonly keepFailed: KeepJobs;

  constructor(
    private readonly results: Queue,
    private readonly options: ResultPublisherOptions = {},
  ) {
    const defaults = retentionFrom();
    this.keep = options.keep ?? defaults.results;
    this.keepFailed = options.keepFailed ?? defaults.failed;
  }

  /** Whether a result of this job is on the queue already (a job delivered again after it published). */
  async isPublished(jobId: string): Promise<boolean> {
    return (await this.published(jobId)) !== null;
  }

  /** The result of this job on the queue, if it is out already. */
  async published(jobId: string): Promise<AgentResult | null> {
    const job = await this.results.getJob(resultJobId(jobId));
    return job ? (job.data as AgentResult) : null;
  }

  async publish(result: AgentResult): Promise<void> {
    await this.results.add(RESULT_JOB_NAME, result, {
      jobId: resultJobId(result.jobId),
      removeOnComplete: this.keep,
      removeOnFail: this.keepFailed,
    });
    this.options.onPublished?.();
  }
}
