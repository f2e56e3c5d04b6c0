// The record and the result of a job that failed for good outside a run (stalled too often, an error in the worker
// itself): written now, or, while MySQL is down, kept in Redis and written by a sweep once it is back. Every
// worker sweeps, so the outcome lands whichever process is alive. The result is published only after its
// record: a published result always has its agent_runs row and its steps.
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { AgentResult, StepTrace } from '../kernel/types.js';
import type { Env } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { isConnectionFailure } from '../store/mysql-errors.js';
import { batchMembership } from './batch-membership.js';
import { StoreError } from '../kernel/errors.js';
import type { RunsRepository, StartRunInput } from '../store/runs-repository.js';
import type { CheckpointStore } from './checkpoint-store.js';
import type { OutcomeStore } from './outcome-store.js';
import type { ResultPublisher } from './result-publisher.js';
import { parkedTracesKey } from './trace-writer.js';

/** Outcomes one sweep records at most. */
const SWEEP_BATCH = 50;

export interface FinalRecorderDeps {
  env: Env;
  repository: RunsRepository;
  redis: Redis;
  outcomes: OutcomeStore;
  checkpoints: CheckpointStore;
  publisher: ResultPublisher;
  metrics?: FleetMetrics;
  logger: Logger;
}

/** What agent_runs needs to start a job's run, from the job's data. */
export function startOf(job: Job, env: Env): StartRunInput {
  const { batchId } = batchMembership(job, env.QUEUE_PREFIX);
  const data = (job.data ?? {}) as {
    task?: unknown;
    model?: unknown;
    protocol?: unknown;
    metadata?: Record<string, unknown>;
  };
  return {
    jobId: String(job.id),
    task: typeof data.task === 'string' ? data.task.slice(0, 8_000) : '',
    model: typeof data.model === 'string' ? data.model : env.LLM_MODEL,
    protocol: data.protocol === 'tools' || data.protocol === 'json' ? data.protocol : env.AGENT_PROTOCOL,
    batchId: batchId ?? null,
    metadata: data.metadata,
    attempt: job.attemptsMade,
  };
}

export class FinalRecorder {
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(private readonly deps: FinalRecorderDeps) {}

  /** Records the outcome, then publishes the result; while MySQL is down, keeps it for a sweep instead. */
  async recordAndPublish(start: StartRunInput, result: AgentResult): Promise<void> {
    try {
      await this.record(start, result);
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      await this.deps.outcomes.keepUnrecorded(result.jobId, {
        result,
        started: false,
        recordTries: 0,
        start,
      });
      this.deps.logger.warn(
        { err: error, jobId: result.jobId },
        'MySQL unreachable: outcome kept for the sweeper',
      );
      return;
    }
    await this.deps.publisher.publish(result);
    this.deps.metrics?.observeResult(result);
    await Promise.all([this.deps.checkpoints.delete(result.jobId), this.deps.outcomes.forget(result.jobId)]);
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

  /** Records the outcomes kept while MySQL was down. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const jobId of await this.deps.outcomes.unrecorded(SWEEP_BATCH)) {
        const kept = await this.deps.outcomes.load(jobId);
        if (kept?.start) await this.recordAndPublish(kept.start, kept.result);
        else await this.deps.outcomes.forget(jobId); // expired: nothing left to write
      }
    } catch (err) {
      this.deps.logger.warn({ err }, 'recording kept outcomes failed; the next sweep tries again');
    } finally {
      this.sweeping = false;
    }
  }

  /** The result and the traces still parked; a run whose start never reached MySQL is started first. */
  private async record(start: StartRunInput, result: AgentResult): Promise<void> {
    const { repository, redis } = this.deps;
    try {
      await repository.finishRun(result);
    } catch (error) {
      if (!(error instanceof StoreError) || error.code !== 'run_not_found') throw error;
      await repository.startRun(start);
      await repository.finishRun(result);
    }
    const key = parkedTracesKey(this.deps.env.QUEUE_PREFIX, result.jobId);
    const traces = (await redis.hvals(key))
      .map((raw) => JSON.parse(raw) as StepTrace)
      .sort((a, b) => a.step - b.step);
    await repository.appendSteps(result.jobId, traces);
    await redis.del(key);
  }
}
