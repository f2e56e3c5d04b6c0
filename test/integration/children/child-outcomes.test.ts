// A child's outcome when its result is not there to read (src/worker/child-jobs.ts, fleet-worker.ts), in process
// against real Redis and BullMQ: failed before its result went out, completed with its result trimmed, failed for
// good after running children of its own. The parent never waits forever, never spins, never loses spend.
import { randomBytes } from 'node:crypto';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import type { ChildRequest } from '../../../src/kernel/child-calls.js';
import { callKeyOf } from '../../../src/kernel/turn-approvals.js';
import type { AgentResult, RunState } from '../../../src/kernel/types.js';
import { createLogger } from '../../../src/logging/logger.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import type { AgentTask } from '../../../src/queue/task-schema.js';
import { ChildJobs } from '../../../src/worker/child-jobs.js';
import { FleetWorker } from '../../../src/worker/fleet-worker.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
import { failedResult } from '../../../src/worker/task-processor.js';
import { REDIS_URL } from '../../support/fleet-harness.js';

let redis: Redis;
let prefix: string;
const log = createLogger('test', 'silent');
const helper = defineAgent({ name: 'helper', description: 'Does a task.', tools: [] });

beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  prefix = `test-rtjobs-${randomBytes(4).toString('hex')}`;
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

/** The checkpoint of a parent parked on one child call (turn 1, its only call). */
function parkedOn(runId: string): RunState {
  return {
    runId,
    steps: 1,
    pending: {
      calls: [{ id: 'c1', name: 'helper', args: { ok: true, value: { task: 'x' } } }],
      results: [null],
      children: [
        {
          agent: 'helper',
          input: { task: 'x' },
          budget: { maxTokens: 5_000, maxCostUsd: 0.01, deadlineMs: 10_000 },
        },
      ],
    },
  } as unknown as RunState;
}

it('a child that failed for good before its result was published does not leave its parent waiting forever', async () => {
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix });
  const results = new Queue(RESULTS_QUEUE, { connection: redis, prefix });
  const publisher = new ResultPublisher(results);
  const children = new ChildJobs(tasks, publisher, new Map([['helper', helper]]));
  let parentRuns = 0;
  // The worker's cycle, as task-processor.ts runs it: read the outcomes of the parked turn; a child without one
  // is asked for again (the kernel's awaitingChildren), i.e. launched again.
  const worker = new Worker(
    TASKS_QUEUE,
    async (job: Job, token?: string) => {
      const task = job.data as AgentTask;
      if (task.parent) {
        // Failed for good without running the processor to its end (a stalled job given up, attempts
        // exhausted): FleetWorker.onFailed publishes its result afterwards, asynchronously (and only once MySQL
        // has its record). Here: a second later.
        setTimeout(() => {
          void publisher.publish(
            failedResult(String(job.id), {
              kind: 'system',
              code: 'attempts_exhausted',
              message: 'job stalled more than allowable limit',
              retryable: false,
            }),
          );
        }, 1_000);
        throw new UnrecoverableError('job stalled more than allowable limit');
      }
      parentRuns++;
      const checkpoint = parkedOn(String(job.id));
      const outcomes = await children.outcomesFor(checkpoint);
      const key = callKeyOf(String(job.id), 1, 0);
      if (outcomes?.[key]) return `parent done: ${outcomes[key].status}`;
      const awaiting: ChildRequest[] = [
        {
          callKey: key,
          callId: 'c1',
          step: 1,
          agent: 'helper',
          input: { task: 'x' },
          budget: checkpoint.pending!.children![0]!.budget,
        },
      ];
      return children.launch(job, token, { awaiting, parent: task, batchId: undefined }, log);
    },
    { connection: redis, prefix, concurrency: 1 },
  );
  try {
    const parent = await tasks.add('task', { agent: 'default', task: 'parent' });
    await expect
      .poll(async () => ({ state: await parent.getState(), runs: parentRuns }), {
        timeout: 10_000,
        interval: 250,
      })
      .toMatchObject({ state: 'completed' });
  } finally {
    await worker.close();
    await tasks.close();
    await results.close();
  }
}, 30_000);

it('a child that completed but whose published result is gone (trimmed by RESULTS_KEEP_COUNT) does not make its parent spin', async () => {
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: `${prefix}-spin` });
  const results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: `${prefix}-spin` });
  const publisher = new ResultPublisher(results);
  const children = new ChildJobs(tasks, publisher, new Map([['helper', helper]]));
  let parentRuns = 0;
  const worker = new Worker(
    TASKS_QUEUE,
    async (job: Job, token?: string) => {
      const task = job.data as AgentTask;
      // The child completes; its result was published and has since been trimmed (results are kept by count
      // across the whole fleet, RESULTS_KEEP_COUNT, while the parent waits): here, never published.
      if (task.parent) return { jobId: String(job.id), status: 'succeeded' };
      parentRuns++;
      const checkpoint = parkedOn(String(job.id));
      const outcomes = await children.outcomesFor(checkpoint);
      const key = callKeyOf(String(job.id), 1, 0);
      if (outcomes?.[key]) return 'parent done';
      const awaiting: ChildRequest[] = [
        {
          callKey: key,
          callId: 'c1',
          step: 1,
          agent: 'helper',
          input: { task: 'x' },
          budget: checkpoint.pending!.children![0]!.budget,
        },
      ];
      return children.launch(job, token, { awaiting, parent: task, batchId: undefined }, log);
    },
    { connection: redis, prefix: `${prefix}-spin`, concurrency: 1 },
  );
  try {
    await tasks.add('task', { agent: 'default', task: 'parent' });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // Relaunching it would spin: active → delayed(now) → active … as fast as Redis goes, for ever.
    expect(parentRuns).toBeLessThan(10);
  } finally {
    await worker.close();
    await tasks.obliterate({ force: true }).catch(() => undefined);
    await tasks.close();
    await results.close();
  }
}, 30_000);

it("a child failed for good after it ran children of its own reports what they spent (the tree's usage)", async () => {
  const env = parseEnv({ ...process.env, QUEUE_PREFIX: prefix });
  const spentByItself = { promptTokens: 1_000, completionTokens: 100 };
  const spentByItsChildren = {
    promptTokens: 9_000,
    completionTokens: 1_000,
    totalTokens: 10_000,
    costUsd: 0.12,
  };
  const state = {
    ...parkedOn('mid'),
    pending: null,
    usage: spentByItself,
    price: { inputPerMillion: 10, outputPerMillion: 30 },
    children: [
      {
        jobId: 'child-g',
        agent: 'helper',
        status: 'succeeded',
        stopReason: 'answer',
        usage: spentByItsChildren,
      },
    ],
    childUsage: spentByItsChildren,
  } as unknown as RunState;
  const fleet = new FleetWorker(
    {
      env,
      checkpoints: { load: async () => state },
      agents: new Map([['helper', helper]]),
      logger: log,
    } as never,
    {
      connection: redis,
      prefix,
      concurrency: 1,
      lockDurationMs: 30_000,
      stalledIntervalMs: 30_000,
      shutdownGraceMs: 1_000,
      retry: { baseMs: 1_000, maxMs: 1_000 },
    } as never,
  );
  try {
    const exhausted = await (
      fleet as unknown as {
        exhaustedResult(job: unknown, error: Error): Promise<AgentResult>;
      }
    ).exhaustedResult(
      { id: 'mid', data: { agent: 'helper', task: 'x' }, attemptsMade: 10, opts: {} },
      new Error('stalled'),
    );
    // The parent takes this usage off its own budget: it must cover the grandchildren, or the tree overspends.
    expect(exhausted.usage.totalTokens).toBe(1_100 + 10_000);
  } finally {
    await fleet.close();
  }
}, 30_000);
