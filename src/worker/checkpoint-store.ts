// Where a job's kernel state lives between attempts: one Redis key per job, next to its queue. A job
// delivered again (after a crash, a stall or a shutdown) resumes from it. Kept for a week, so a long
// backoff never outlives it; deleted once the result is published.
import type { RedisClient } from '../queue/redis.js';
import type { RunState } from '../kernel/types.js';

export const CHECKPOINT_TTL_SECONDS = 7 * 24 * 3600;

/** The Redis key of a job's checkpoint. */
export const checkpointKey = (prefix: string, jobId: string): string => `${prefix}:agent-checkpoint:${jobId}`;

export class CheckpointStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(jobId: string): string {
    return checkpointKey(this.prefix, jobId);
  }

  async load(jobId: string): Promise<RunState | null> {
    const raw = await this.redis.get(this.key(jobId));
    return raw ? (JSON.parse(raw) as RunState) : null;
  }

  /** Stores the state as the kernel serialized it (Checkpoint.json): no second serialization here. */
  async save(jobId: string, json: string): Promise<void> {
    await this.redis.set(this.key(jobId), json, 'EX', CHECKPOINT_TTL_SECONDS);
  }

  async delete(jobId: string): Promise<void> {
    await this.redis.del(this.key(jobId));
  }
}
