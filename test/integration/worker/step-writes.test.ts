// A step's Redis writes (checkpoint, parked trace, progress with its event, log line) leave in one command, and
// read back as BullMQ's own updateProgress and log would have written them. A Redis server of the test's own, so
// INFO commandstats counts this test's commands alone.
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StepTrace } from '../../../src/kernel/types.js';
import { createLogger } from '../../../src/logging/logger.js';
import { checkpointKey } from '../../../src/worker/checkpoint-store.js';
import { progressOf, stepLogLine } from '../../../src/worker/progress.js';
import { StepWrites } from '../../../src/worker/step-writes.js';
import { parkedTracesKey } from '../../../src/worker/trace-writer.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';

const PREFIX = 'test-step-writes';
const logger = createLogger('test', 'silent');
let server: PrivateRedis;
let redis: Redis;
let queue: Queue;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  queue = new Queue('agent-tasks', { connection: redis, prefix: PREFIX });
});

afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await server.close();
});

const trace = (step: number): StepTrace =>
  ({
    runId: 'r',
    step,
    kind: 'action',
    actions: [{ id: 'c1', tool: 'list_tables', args: {}, ok: true, errorCode: null, latencyMs: 3 }],
    observations: ['tables: a, b'],
    promptTokens: 100,
    completionTokens: 20,
    costUsd: 0.0001,
    latencyMs: 12,
    modelLatencyMs: 10,
    modelCalls: 1,
    error: null,
    totals: {
      promptTokens: 100 * step,
      completionTokens: 20 * step,
      totalTokens: 120 * step,
      costUsd: 0.0001 * step,
      steps: step,
      maxSteps: 8,
      toolCalls: step,
    },
  }) as unknown as StepTrace;

async function commandsCalled(): Promise<number> {
  const text = await redis.info('commandstats');
  return [...text.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[2]), 0);
}

it('writes checkpoint, parked trace, progress (with its event) and log line of a step in one command', async () => {
  const events = new QueueEvents('agent-tasks', { connection: { url: server.url }, prefix: PREFIX });
  await events.waitUntilReady();
  const job = await queue.add('agent-task', { task: 't' }, { keepLogs: 2 });
  const jobId = String(job.id);
  const writes = new StepWrites(redis, job, PREFIX, logger);
  const progressed = new Promise((resolve) => events.once('progress', resolve));
  await writes.checkpoint('{"steps":0}'); // warm: the script's first use loads it
  await redis.config('RESETSTAT');
  const before = await commandsCalled();

  // As the kernel hands them over at the end of a step: the checkpoint, then the trace, in the same turn.
  const written = writes.checkpoint('{"steps":1}');
  writes.step(trace(1));
  await written;
  await writes.settled();
  expect((await commandsCalled()) - before).toBe(1);

  expect(await redis.get(checkpointKey(PREFIX, jobId))).toBe('{"steps":1}');
  expect(await redis.ttl(checkpointKey(PREFIX, jobId))).toBeGreaterThan(0);
  expect(JSON.parse((await redis.hget(parkedTracesKey(PREFIX, jobId), '1'))!)).toEqual(trace(1));
  expect((await queue.getJob(jobId))!.progress).toEqual(progressOf(trace(1)));
  expect(await progressed).toMatchObject({ jobId, data: progressOf(trace(1)) });
  expect((await queue.getJobLogs(jobId)).logs).toEqual([stepLogLine(trace(1))]);

  // The job's keepLogs holds, as BullMQ's own log does.
  for (const step of [2, 3]) {
    writes.step(trace(step));
    await writes.settled();
  }
  expect((await queue.getJobLogs(jobId)).logs).toEqual([stepLogLine(trace(2)), stepLogLine(trace(3))]);
  await events.close();
});

it('still writes checkpoint and trace of a job removed meanwhile, and no progress or log for it', async () => {
  const job = await queue.add('agent-task', { task: 't' });
  const jobId = String(job.id);
  await job.remove();
  const writes = new StepWrites(redis, job, PREFIX, logger);
  const written = writes.checkpoint('{"steps":1}');
  writes.step(trace(1));
  await written;
  await writes.settled();
  expect(await redis.get(checkpointKey(PREFIX, jobId))).toBe('{"steps":1}');
  expect(await redis.hexists(parkedTracesKey(PREFIX, jobId), '1')).toBe(1);
  expect(await redis.exists(`${PREFIX}:agent-tasks:${jobId}`)).toBe(0);
  expect(await redis.exists(`${PREFIX}:agent-tasks:${jobId}:logs`)).toBe(0);
});
