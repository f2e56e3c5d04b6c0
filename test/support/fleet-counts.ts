// What a fault scenario checks at the end, counted from where it lives: results on agent-results, rows in
// agent_runs and agent_steps. Counted per job, so "exactly one" catches both a loss and a duplicate.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { AgentResult } from '../../src/kernel/types.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../src/queue/names.js';
import type { RedisClient } from '../../src/queue/redis.js';
import { queryStore, type FleetNamespace } from './fleet-harness.js';

/** Result jobs on agent-results per task job id, in every state: on one server's URL, or a connection given. */
export async function resultsPerJob(
  redis: string | RedisClient,
  prefix: string,
): Promise<Map<string, number>> {
  const connection = typeof redis === 'string' ? new Redis(redis, { maxRetriesPerRequest: null }) : redis;
  const results = new Queue(RESULTS_QUEUE, { connection, prefix });
  try {
    const jobs = await results.getJobs([
      'waiting',
      'delayed',
      'prioritized',
      'active',
      'completed',
      'failed',
    ]);
    const counts = new Map<string, number>();
    for (const job of jobs) {
      const id = (job.data as AgentResult).jobId;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  } finally {
    await results.close();
    if (typeof redis === 'string') connection.disconnect();
  }
}

/**
 * How often each task job was found stalled (its lock gone with no worker holding it: a worker that died under
 * it), from BullMQ's own counter on the job.
 */
export async function stallsPerJob(
  redisUrl: string,
  prefix: string,
  jobIds: readonly string[],
): Promise<Map<string, number>> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix });
  try {
    const jobs = await Promise.all(jobIds.map((id) => tasks.getJob(id)));
    return new Map(jobIds.map((id, i) => [id, jobs[i]?.stalledCounter ?? 0]));
  } finally {
    await tasks.close();
    connection.disconnect();
  }
}

export interface RunRecord {
  jobId: string;
  status: string;
  steps: number;
  attempts: number;
  stepRows: number;
}

/** agent_runs rows per job id, with the number of agent_steps rows of each. */
export async function runRecords(ns: FleetNamespace): Promise<Map<string, RunRecord[]>> {
  const rows = await queryStore<{
    job_id: string;
    status: string;
    steps: number;
    attempts: number;
    step_rows: number;
  }>(
    ns,
    `SELECT r.job_id, r.status, r.steps, r.attempts,
            (SELECT COUNT(*) FROM agent_steps s WHERE s.job_id = r.job_id) AS step_rows
       FROM agent_runs r`,
  );
  const records = new Map<string, RunRecord[]>();
  for (const row of rows) {
    const list = records.get(row.job_id) ?? [];
    list.push({
      jobId: row.job_id,
      status: row.status,
      steps: Number(row.steps),
      attempts: Number(row.attempts),
      stepRows: Number(row.step_rows),
    });
    records.set(row.job_id, list);
  }
  return records;
}

/** The job ids among `jobIds` that do not have exactly one of what `counts` counts. */
export function notExactlyOnce(jobIds: readonly string[], counts: ReadonlyMap<string, number>): string[] {
  return jobIds.filter((id) => (counts.get(id) ?? 0) !== 1);
}
