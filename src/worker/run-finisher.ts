// The one path by which a job's outcome becomes final, whoever ends it: the task processor (a run that finished,
// a task that never ran) or the worker's failure handler and its sweeper (a job that failed for good outside a run).
// In this order, each step idempotent: the run's start (if MySQL lacks it), its traces and its result into MySQL;
// then the result published (once: its id derives from the job's); then the metrics, once per publication; then
// the job's own Redis state forgotten. While MySQL is unreachable the outcome is kept in Redis instead and nothing
// is published: the job is redelivered later, or, when it failed for good, the sweeper records it.
import type { Job } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import type { AgentResult } from '../kernel/types.js';
import type { Env } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { isConnectionFailure } from '../store/mysql-errors.js';
import { StoreError } from '../kernel/errors.js';
import type { StartRunInput } from '../store/runs-repository.js';
import { TENANT_NAME } from '../queue/tenant-name.js';
import { batchMembership } from './batch-membership.js';
import { forgetJobState } from './job-state.js';
import type { OutcomeStore } from './outcome-store.js';
import type { ResultPublisher } from './result-publisher.js';
import { withRetries } from './retry.js';
import type { RunJournal } from './run-journal.js';
import { TraceWriter } from './trace-writer.js';

const STORE_RETRIES = { attempts: 4, baseDelayMs: 250 };

/** Outcomes one sweep records at most. */
const SWEEP_BATCH = 50;

export interface RunFinisherDeps {
  env: Env;
  journal: RunJournal;
  redis: RedisClient;
  outcomes: OutcomeStore;
  publisher: ResultPublisher;
  metrics?: FleetMetrics;
  logger: Logger;
}

export interface FinishingRun {
  result: AgentResult;
  /** The run's start as agent_runs takes it: written when MySQL has no row for the run. */
  start: StartRunInput;
  /** Resolves once the start the run wrote itself is in (the processor's); rejects when it could not be. */
  started?: () => Promise<void>;
  /** The job's trace writer; without one, the traces an earlier attempt parked are written. */
  traces?: TraceWriter;
  /**
   * The result may be out already (a job delivered again, or failed after its processor published): then it is
   * neither recorded nor published nor counted again. A first delivery skips the look-up.
   */
  recheck?: boolean;
  /** Redeliveries so far spent waiting for MySQL (a kept outcome's). */
  recordTries?: number;
  /**
   * While MySQL is unreachable: `redeliver` keeps the outcome for the job's next delivery (the caller delays
   * the job), `sweep` keeps it for the sweeper (the job failed for good and is not delivered again).
   */
  whileDown: 'redeliver' | 'sweep';
}

export type Finished =
  { kept: false; published: boolean } | { kept: true; recordTries: number; error: unknown };

/** What agent_runs needs to start a job's run, from the job's data (for a job that failed for good outside a run). */
export function startOf(job: Job, env: Env): StartRunInput {
  const { batchId } = batchMembership(job, env.QUEUE_PREFIX);
  const data = (job.data ?? {}) as {
    task?: unknown;
    model?: unknown;
    protocol?: unknown;
    tenant?: unknown;
    metadata?: Record<string, unknown>;
  };
  return {
    jobId: String(job.id),
    task: typeof data.task === 'string' ? data.task.slice(0, 8_000) : '',
    model: typeof data.model === 'string' ? data.model : env.LLM_MODEL,
    protocol: data.protocol === 'tools' || data.protocol === 'json' ? data.protocol : env.AGENT_PROTOCOL,
    // The job's data is unchecked here (the task may have failed validation): a tenant only if well formed.
    tenant: typeof data.tenant === 'string' && TENANT_NAME.test(data.tenant) ? data.tenant : null,
    batchId: batchId ?? null,
    metadata: data.metadata,
    attempt: job.attemptsMade,
  };
}

export class RunFinisher {
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(private readonly deps: RunFinisherDeps) {}

  async finish(run: FinishingRun): Promise<Finished> {
    const { result } = run;
    const log = this.deps.logger.child({ jobId: result.jobId });
    const published = run.recheck ? await this.deps.publisher.published(result.jobId) : null;
    if (published) {
      if (run.started) await this.restoreRecord(published, run.started, log);
      this.forget(result.jobId);
      return { kept: false, published: false };
    }
    let started = false;
    try {
      if (run.started) {
        await run.started();
        started = true;
      }
      await this.record(run, log, () => (started = true));
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      const recordTries = (run.recordTries ?? 0) + 1;
      const outcome = { result, started, recordTries, start: run.start };
      if (run.whileDown === 'sweep') {
        await this.deps.outcomes.keepUnrecorded(result.jobId, outcome);
        log.warn({ err: error }, 'MySQL unreachable: outcome kept for the sweeper');
      } else {
        await this.deps.outcomes.keep(result.jobId, outcome);
      }
      return { kept: true, recordTries, error };
    }
    await withRetries(() => this.deps.publisher.publish(result), STORE_RETRIES);
    this.deps.metrics?.observeResult(result);
    this.forget(result.jobId);
    return { kept: false, published: true };
  }

  /**
   * Two attempts of one job overlapped (the first one's lock lapsed, say while Redis was away, and the job was
   * delivered again): the first published, and this one's start set the record back to `running`. The published
   * result goes back in, after that start. MySQL down now: the record stays `running`, said in the log.
   */
  private async restoreRecord(
    published: AgentResult,
    started: () => Promise<void>,
    log: Logger,
  ): Promise<void> {
    try {
      await started();
      await withRetries(() => this.deps.journal.finish(published), STORE_RETRIES);
    } catch (err) {
      log.warn({ err }, 'result published by an earlier attempt; its record could not be written back');
    }
  }

  /** Not waited for: with the result out nothing reads the job's state again, and one left behind expires. */
  private forget(jobId: string): void {
    void forgetJobState(this.deps.redis, this.deps.env.QUEUE_PREFIX, jobId).catch(() => undefined);
  }

  /** Sweeps now and every `intervalMs` until stopped. */
  sweepEvery(intervalMs: number): void {
    this.timer = setInterval(() => void this.sweep(), intervalMs);
    this.timer.unref();
    void this.sweep();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Records the outcomes of jobs that failed for good while MySQL was down. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const { outcomes } = this.deps;
      for (const jobId of await outcomes.unrecorded(SWEEP_BATCH)) {
        // Another worker's sweep has it: both would pass the isPublished check and count the result twice.
        if (!(await outcomes.claimForSweep(jobId))) continue;
        try {
          const kept = await outcomes.load(jobId);
          if (!kept?.start) {
            await outcomes.forget(jobId); // expired: nothing left to write
            continue;
          }
          const finished = await this.finish({
            result: kept.result,
            start: kept.start,
            recordTries: kept.recordTries,
            recheck: true,
            whileDown: 'sweep',
          });
          if (finished.kept) break; // still down: the next sweep tries again
        } finally {
          await outcomes.releaseSweepClaim(jobId);
        }
      }
    } catch (err) {
      this.deps.logger.warn({ err }, 'recording kept outcomes failed; the next sweep tries again');
    } finally {
      this.sweeping = false;
    }
  }

  /** Traces, then the result, in the journal's shared batches; the start first when MySQL has no row. */
  private async record(run: FinishingRun, log: Logger, onStarted: () => void): Promise<void> {
    const { journal } = this.deps;
    const traces =
      run.traces ??
      new TraceWriter(journal, this.deps.redis, this.deps.env.QUEUE_PREFIX, run.result.jobId, log);
    if (!run.traces) await traces.recover();
    await traces.flush();
    // A run never started is the store's answer, not a failure to retry: the start goes in at once.
    const finished = () =>
      journal.finish(run.result).then(
        () => true,
        (error: unknown) => {
          if (error instanceof StoreError && error.code === 'run_not_found') return false;
          throw error;
        },
      );
    if (!(await withRetries(finished, STORE_RETRIES))) {
      await withRetries(() => journal.start(run.start), STORE_RETRIES);
      onStarted();
      await withRetries(() => journal.finish(run.result), STORE_RETRIES);
    }
    onStarted();
  }
}
