// The results retention can trim a task's result while its completed job is still kept (results are counted with
// the failed tasks', completed jobs without them). A reader must then get the archived result, or a clear error,
// never a wait that lasts forever.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { InputError } from '../../../src/kernel/errors.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import { RESULTS_QUEUE, resultJobId, TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';
import { failedResult } from '../../../src/worker/task-processor.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
import { ResultsRetention } from '../../../src/worker/results-retention.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import type { ResultArchive } from '../../../producers/result-archive.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';

let ns: FleetNamespace;
let connection: Redis;

const resultOf = (jobId: string): AgentResult => ({
  ...failedResult(jobId, { kind: 'system', code: 'x', message: 'x', retryable: false }),
  status: 'succeeded',
  stopReason: 'answer',
  answer: `answer of ${jobId}`,
  error: null,
});

beforeAll(async () => {
  ns = createNamespace('trimmed');
  connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
  const results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
  const publisher = new ResultPublisher(results);
  // Each task's result goes out before its job completes, as the fleet's worker does it.
  const worker = new Worker(
    TASKS_QUEUE,
    async (job) => {
      await publisher.publish(resultOf(String(job.id)));
      return 'done';
    },
    { connection, prefix: ns.prefix },
  );
  await tasks.add(TASK_JOB_NAME, { task: 'one' }, { jobId: 'trim-1' });
  await tasks.add(TASK_JOB_NAME, { task: 'two' }, { jobId: 'trim-2' });
  const deadline = Date.now() + 20_000;
  while ((await tasks.getCompletedCount()) < 2) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await worker.close();
  // Keep one result: the older one goes, its completed task job stays.
  const removed = await new ResultsRetention(results, { age: 3_600, count: 1 }, () => undefined).trim();
  expect(removed).toBe(1);
  const kept = await Promise.all(['trim-1', 'trim-2'].map((id) => results.getJob(resultJobId(id))));
  expect(kept.filter(Boolean)).toHaveLength(1);
  await tasks.close();
  await results.close();
}, 30_000);

afterAll(async () => {
  connection.disconnect();
  await ns.cleanup();
});

const trimmedId = async (): Promise<string> => {
  const results = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
  try {
    return (await results.getJob(resultJobId('trim-1'))) ? 'trim-2' : 'trim-1';
  } finally {
    await results.close();
  }
};

it('a completed task whose result was trimmed is answered from the archive', async () => {
  const jobId = await trimmedId();
  const archive: ResultArchive = {
    getResult: async (id) => (id === jobId ? resultOf(id) : null),
    getBatch: async () => null,
  };
  const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, archive });
  try {
    expect((await client.getResult(jobId))?.answer).toBe(`answer of ${jobId}`);
    expect((await client.getTask(jobId)).result?.answer).toBe(`answer of ${jobId}`);
    const waited = await client.waitForResult(jobId, { timeoutMs: 5_000, pollMs: 50 });
    expect(waited.answer).toBe(`answer of ${jobId}`);
  } finally {
    await client.close();
  }
});

it('without an archive, waiting for a trimmed result fails at once and says why', async () => {
  const jobId = await trimmedId();
  const started = Date.now();
  const error = await ns.client.waitForResult(jobId, { timeoutMs: 10_000, pollMs: 50 }).catch((e) => e);
  expect(error).toBeInstanceOf(InputError);
  expect((error as InputError).code).toBe('result_expired');
  expect(Date.now() - started).toBeLessThan(5_000);
});
