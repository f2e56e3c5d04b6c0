// Publishes a result (docs/tasks-and-results.md) on agent-results exactly once: the result job's id derives from the task's,
// and BullMQ ignores an add whose id already exists, so a retried or resumed job can publish again safely.
// The result job carries the fleet's results retention, applied when a consumer completes (or fails) it.
//
// A Sentinel failover can lose a publication: the old master acknowledges it after its replica was promoted, and
// the task job's completion, sent next on a connection that has just moved, succeeds on the new master (the job's
// lock was replicated). So the publisher remembers its latest results for a while, and when the connection lands
// on another server it publishes again those that server does not have (docs/operations.md).
import type { KeepJobs, Queue } from 'bullmq';
import type { AgentResult } from '../kernel/types.js';
import { RESULT_JOB_NAME, resultJobId } from '../queue/names.js';
import { retentionFrom } from '../queue/retention.js';

/** Replication lags by milliseconds and a failover is noticed within seconds: 30 s covers both many times over. */
const REMEMBER_MS = 30_000;
/** At most this many results in memory (at a few KB each, a few MB), the newest kept. */
const REMEMBER_COUNT = 2_000;

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
  /** The latest publications, oldest first (a Map keeps its insertion order). */
  private readonly recent = new Map<string, { result: AgentResult; at: number }>();
  private readonly rememberCount: number;
  private readonly rememberMs: number;

  constructor(
    private readonly results: Queue,
    private readonly options: ResultPublisherOptions = {},
  ) {
    const defaults = retentionFrom();
    this.keep = options.keep ?? defaults.results;
    this.keepFailed = options.keepFailed ?? defaults.failed;
    // A result the retention trimmed, published again, would reach a consumer twice: no more is remembered than
    // the retention keeps (of the whole fleet's results, so at a high rate a few of these may be trimmed already).
    this.rememberCount = Math.min(REMEMBER_COUNT, this.keep.count ?? REMEMBER_COUNT);
    this.rememberMs = Math.min(REMEMBER_MS, 'age' in this.keep ? this.keep.age * 1_000 : Infinity);
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
    await this.add(result);
    this.remember(result);
    this.options.onPublished?.();
  }

  /**
   * After the connection moved to another server: the results published lately that it does not have are
   * published again. Gives their job ids. A result a consumer took and removed in the moment between is
   * published twice; the default retention keeps consumed results, so only a retention of a few results can.
   */
  async publishAgainIfLost(): Promise<string[]> {
    this.forgetOld(Date.now());
    const recent = [...this.recent.values()];
    const found = await Promise.all(
      recent.map(({ result }) => this.results.getJob(resultJobId(result.jobId))),
    );
    const lost = recent.filter((_, i) => !found[i]).map(({ result }) => result);
    for (const result of lost) await this.add(result);
    return lost.map((result) => result.jobId);
  }

  private async add(result: AgentResult): Promise<void> {
    await this.results.add(RESULT_JOB_NAME, result, {
      jobId: resultJobId(result.jobId),
      removeOnComplete: this.keep,
      removeOnFail: this.keepFailed,
    });
  }

  private remember(result: AgentResult): void {
    if (this.rememberCount <= 0 || this.rememberMs <= 0) return;
    const now = Date.now();
    this.recent.delete(result.jobId);
    this.recent.set(result.jobId, { result, at: now });
    this.forgetOld(now);
  }

  private forgetOld(now: number): void {
    for (const [jobId, { at }] of this.recent) {
      if (this.recent.size <= this.rememberCount && now - at <= this.rememberMs) break;
      this.recent.delete(jobId);
    }
  }
}
