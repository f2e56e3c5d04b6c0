// The outcome of a finished job whose record MySQL could not take (it was down): kept in Redis, next to the
// job's parked traces, until the record lands. The job is redelivered later (task-processor.ts) and writes it
// then; a job that failed for good is listed as unrecorded and written by any worker's sweeper (fleet-worker.ts).
// Its result is published only once its record is in: a published result always has its row.
import type { RedisClient } from '../queue/redis.js';
import type { AgentResult } from '../kernel/types.js';
import type { StartRunInput } from '../store/runs-repository.js';

/** As long as checkpoints and parked traces: an outage shorter than this loses nothing. */
export const OUTCOME_TTL_SECONDS = 7 * 24 * 3600;

/** The Redis key of a job's kept outcome, and of the set of jobs the sweeper has to record. */
export const outcomeKey = (prefix: string, jobId: string): string => `${prefix}:agent-outcome:${jobId}`;
export const unrecordedKey = (prefix: string): string => `${prefix}:agent-unrecorded`;
const sweepClaimKey = (prefix: string, jobId: string): string => `${prefix}:agent-sweeping:${jobId}`;

/** How long one sweeper holds a kept outcome: longer than a record and a publish take, retries included. */
const SWEEP_CLAIM_SECONDS = 60;

export interface KeptOutcome {
  result: AgentResult;
  /** Whether the run's start is in agent_runs already (then it is not written again: attempts stay right). */
  started: boolean;
  /** Redeliveries so far for this record: they space the next one (src/queue/retry-schedule.ts). */
  recordTries: number;
  /** For a job that failed for good: its run's start, as the sweeper writes it. */
  start?: StartRunInput;
}

export class OutcomeStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(jobId: string): string {
    return outcomeKey(this.prefix, jobId);
  }

  private get unrecordedKey(): string {
    return unrecordedKey(this.prefix);
  }

  async load(jobId: string): Promise<KeptOutcome | null> {
    const raw = await this.redis.get(this.key(jobId));
    return raw ? (JSON.parse(raw) as KeptOutcome) : null;
  }

  async keep(jobId: string, outcome: KeptOutcome): Promise<void> {
    await this.redis.set(this.key(jobId), JSON.stringify(outcome), 'EX', OUTCOME_TTL_SECONDS);
  }

  /** A job that failed for good with its outcome kept: the sweeper writes its record. */
  async keepUnrecorded(jobId: string, outcome: KeptOutcome): Promise<void> {
    await this.redis
      .multi()
      .set(this.key(jobId), JSON.stringify(outcome), 'EX', OUTCOME_TTL_SECONDS)
      .sadd(this.unrecordedKey, jobId)
      .exec();
  }

  /** Jobs the sweeper has to record, at most `count` at a time. */
  async unrecorded(count: number): Promise<string[]> {
    return this.redis.srandmember(this.unrecordedKey, count);
  }

  /**
   * Every worker sweeps: the one that claims a kept outcome records it, the others skip it, so its result is
   * published and counted by one of them. False when another sweeper holds it.
   */
  async claimForSweep(jobId: string): Promise<boolean> {
    const key = sweepClaimKey(this.prefix, jobId);
    return (await this.redis.set(key, '1', 'EX', SWEEP_CLAIM_SECONDS, 'NX')) === 'OK';
  }

  async releaseSweepClaim(jobId: string): Promise<void> {
    await this.redis.del(sweepClaimKey(this.prefix, jobId));
  }

  /** The record is in: nothing to keep any more. */
  async forget(jobId: string): Promise<void> {
    await this.redis.multi().del(this.key(jobId)).srem(this.unrecordedKey, jobId).exec();
  }
}
