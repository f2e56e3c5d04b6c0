// Retention: with small configured counts, a real worker keeps at most that many finished jobs in Redis on
// every queue, whether or not anyone consumes agent-results; older results are still in MySQL.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { RESULT_JOB_NAME, RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { StoreResultArchive } from '../../../producers/result-archive.js';
import { ResultsRetention } from '../../../src/worker/results-retention.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

const KEEP = { results: 4, completed: 3, failed: 2 };

let model: ScriptedModelServer;
let ns: FleetNamespace;
let connection: Redis;
let tasks: Queue;
let results: Queue;
let worker: WorkerHandle;

/** Job hashes under a queue's prefix: what Redis really holds, whatever the lists and sets say. */
async function jobKeys(queue: string): Promise<number> {
  let cursor = '0';
  let count = 0;
  do {
    const [next, keys] = await connection.scan(cursor, 'MATCH', `${ns.prefix}:${queue}:*`, 'COUNT', 1000);
    cursor = next;
    // Job hashes are `<prefix>:<queue>:<id>`; the queue's own keys (wait, events, meta, …) and a job's
    // sub-keys (`:logs`, `:lock`) are not jobs.
    count += keys.filter((key) => {
      const id = key.slice(`${ns.prefix}:${queue}:`.length);
      return !id.includes(':') && /^(result-|\d)/.test(id);
    }).length;
  } while (cursor !== '0');
  return count;
}

async function finishedRuns(): Promise<number> {
  const [row] = await queryStore<{ n: number }>(
    ns,
    'SELECT COUNT(*) AS n FROM agent_runs WHERE finished_at IS NOT NULL',
  );
  return Number(row?.n ?? 0);
}

beforeAll(async () => {
  model = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('retention');
  connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
  results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    AGENT_PROTOCOL: 'json',
    AGENT_MAX_COST_USD: '1',
    METRICS_PORT: '0',
    WORKER_CONCURRENCY: '4',
    RESULTS_KEEP_COUNT: String(KEEP.results),
    TASKS_KEEP_COMPLETED_COUNT: String(KEEP.completed),
    TASKS_KEEP_FAILED_COUNT: String(KEEP.failed),
  });
  await worker.waitForOutput(/worker started/, 30_000);
});

afterAll(async () => {
  await killWorker(worker);
  await tasks.close();
  await results.close();
  connection.disconnect();
  await ns.cleanup();
  await model.close();
});

describe('a worker with small retention counts', () => {
  it('keeps at most the configured number of result, completed and failed jobs after many tasks', async () => {
    const good = await ns.client.enqueueMany(
      Array.from({ length: 12 }, (_, i) => ({ task: `job keep${i}: 2 steps` })),
    );
    // Invalid jobs, enqueued behind the producers' back: they fail for good, each with a published result.
    for (let i = 0; i < 4; i++) await tasks.add('agent-task', { task: '' });
    await expect.poll(finishedRuns, { timeout: 60_000, interval: 250 }).toBe(16);

    // Nobody consumes agent-results here: the worker trims the waiting results within about a second.
    await expect.poll(() => results.getWaitingCount(), { timeout: 10_000 }).toBe(KEEP.results);
    await expect.poll(() => jobKeys(RESULTS_QUEUE), { timeout: 10_000 }).toBe(KEEP.results);
    expect(await tasks.getCompletedCount()).toBeLessThanOrEqual(KEEP.completed);
    expect(await tasks.getFailedCount()).toBeLessThanOrEqual(KEEP.failed);
    expect(await jobKeys(TASKS_QUEUE)).toBeLessThanOrEqual(KEEP.completed + KEEP.failed);

    // A trimmed result is gone from Redis but not from MySQL. (Which ones were trimmed depends on the order the
    // jobs finished in, with four at a time.)
    const inRedis = await Promise.all(good.map(({ jobId }) => ns.client.getResult(jobId)));
    const trimmedAt = inRedis.findIndex((result) => result === null);
    expect(trimmedAt).toBeGreaterThanOrEqual(0);
    const oldest = good[trimmedAt]!.jobId;
    const [run] = await queryStore<{ status: string }>(ns, 'SELECT status FROM agent_runs WHERE job_id = ?', [
      oldest,
    ]);
    expect(run?.status).toBe('succeeded');

    // A client with the store as its archive (the API has one) still answers for it, as the store has it.
    const archive = new StoreResultArchive(ns.mysqlUrl);
    const archived = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, archive });
    try {
      const status = await archived.getTask(oldest);
      expect(status).toMatchObject({ state: 'completed', result: { jobId: oldest, status: 'succeeded' } });
      expect(await archived.waitForResult(oldest, { timeoutMs: 5_000 })).toEqual(status.result);
      // A result still in Redis is answered from there, as without an archive.
      const [kept] = await results.getWaiting(0, 0);
      const keptResult = kept!.data as { jobId: string };
      expect(await archived.getResult(keptResult.jobId)).toEqual(keptResult);
      expect((await archived.getTask('no-such-job')).state).toBe('unknown');
    } finally {
      await archived.close();
      await archive.close();
    }
  }, 90_000);

  it('a consumer on agent-results gets every result, and the processed ones are removed by the same policy', async () => {
    const seen: AgentResult[] = [];
    const consumerConnection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const consumer = new Worker(
      RESULTS_QUEUE,
      async (job) => {
        if (job.name === RESULT_JOB_NAME) seen.push(job.data as AgentResult);
      },
      { connection: consumerConnection, prefix: ns.prefix },
    );
    try {
      await expect.poll(() => results.getWaitingCount(), { timeout: 10_000 }).toBe(0);
      seen.length = 0;
      const jobs = await ns.client.enqueueMany(
        Array.from({ length: 8 }, (_, i) => ({ task: `job consumed${i}: 2 steps` })),
      );
      // A result of the test above may still arrive (a result is published after its run is in MySQL, which the
      // test above waits for): only this test's jobs are counted, each once.
      const ids = new Set(jobs.map((j) => j.jobId));
      const ours = () => seen.filter((r) => ids.has(r.jobId));
      await expect.poll(() => ours().length, { timeout: 60_000 }).toBeGreaterThanOrEqual(jobs.length);
      expect(
        ours()
          .map((r) => r.jobId)
          .sort(),
      ).toEqual([...ids].sort());
      expect(await results.getCompletedCount()).toBeLessThanOrEqual(KEEP.results);
      expect(await jobKeys(RESULTS_QUEUE)).toBeLessThanOrEqual(KEEP.results);
    } finally {
      await consumer.close();
      consumerConnection.disconnect();
    }
  }, 90_000);
});

describe('a batch larger than RESULTS_KEEP_COUNT', () => {
  it('is summed all the same: the results trimmed from Redis are read from MySQL', async () => {
    // One slow task holds the batch open while the results of the six fast ones are published and trimmed.
    model.reset({
      rules: [
        (request) =>
          String(request.messages[1]?.content).startsWith('job wideslow:')
            ? { ...stepsModel(request), latencyMs: 2_500 }
            : undefined,
        stepsModel,
      ],
    });
    const fast = Array.from({ length: 6 }, (_, i) => ({ task: `job wide${i}: 2 steps` }));
    const { batchId, jobIds } = await ns.client.enqueueBatch({
      tasks: [...fast, { task: 'job wideslow: 2 steps' }],
    });
    // Which fast result is trimmed first depends on the order the jobs finish in: wait for any one of them.
    const fastIds = jobIds.slice(0, fast.length);
    const trimmedFast = async () => {
      const [done] = await queryStore<{ n: number }>(
        ns,
        'SELECT COUNT(*) AS n FROM agent_runs WHERE job_id IN (?) AND finished_at IS NOT NULL',
        [fastIds],
      );
      if (Number(done?.n) < fastIds.length) return 0; // not all published yet: a missing result proves nothing
      const results = await Promise.all(fastIds.map((id) => ns.client.getResult(id)));
      return results.filter((result) => result === null).length;
    };
    await expect.poll(trimmedFast, { timeout: 20_000, interval: 200 }).toBeGreaterThan(0);
    const status = await ns.client.waitForBatch(batchId, { timeoutMs: 45_000 });
    expect(status.state).toBe('completed');
    expect(status.summary).toMatchObject({ batchId, tasks: 7, succeeded: 7, stopped: 0, failed: 0 });
    const [runs] = await queryStore<{ tokens: number }>(
      ns,
      'SELECT SUM(prompt_tokens + completion_tokens) AS tokens FROM agent_runs WHERE batch_id = ?',
      [batchId],
    );
    expect(status.summary.usage.totalTokens).toBe(Number(runs?.tokens));
    model.reset({ rules: [stepsModel] });

    // Four more batches push its parent out of agent-batches; a client with the archive still has it.
    for (let i = 0; i < 4; i++) {
      const small = await ns.client.enqueueBatch({ tasks: [{ task: `job small${i}: 1 steps` }] });
      await ns.client.waitForBatch(small.batchId, { timeoutMs: 30_000 });
    }
    await expect.poll(() => ns.client.getBatch(batchId), { timeout: 10_000 }).toBeNull();
    const archive = new StoreResultArchive(ns.mysqlUrl);
    const archived = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, archive });
    try {
      expect(await archived.getBatch(batchId)).toEqual({
        state: 'completed',
        summary: status.summary,
        jobIds,
      });
    } finally {
      await archived.close();
      await archive.close();
    }
  }, 90_000);
});

describe('ResultsRetention', () => {
  it('removes the oldest waiting results beyond the count, and those older than the age', async () => {
    const queue = new Queue(`retention-unit`, { connection, prefix: ns.prefix });
    const day = 24 * 3600 * 1000;
    try {
      // Two results from ten days ago, then six of today, in publishing order.
      for (let i = 0; i < 8; i++) {
        await queue.add(
          RESULT_JOB_NAME,
          { i },
          { jobId: `result-${i}`, timestamp: Date.now() - (i < 2 ? 10 * day : 0) },
        );
      }
      const retention = new ResultsRetention(queue, { age: 7 * 24 * 3600, count: 100 }, (error) => {
        throw error;
      });
      expect(await retention.trim()).toBe(2);
      const byCount = new ResultsRetention(queue, { age: 7 * 24 * 3600, count: 3 }, (error) => {
        throw error;
      });
      expect(await byCount.trim()).toBe(3);
      const left = await queue.getWaiting();
      expect(left.map((job) => job.id).sort()).toEqual(['result-5', 'result-6', 'result-7']);
      await Promise.all([retention.close(), byCount.close()]);
    } finally {
      await queue.close();
    }
  });
});
