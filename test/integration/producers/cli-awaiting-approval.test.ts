// `npm run enqueue -- --wait` on a task that parks for approvals, against the real Redis of REDIS_URL under a prefix
// of its own. A BullMQ worker of the test plays the fleet worker's part as far as parking goes: it sets the parked
// progress and moves the job to delayed (no worker slot held); the test then publishes the result.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { DelayedError, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { jobIdForKey } from '../../../src/queue/job-options.js';
import { RESULT_JOB_NAME, resultJobId, RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-cli-approval-${randomBytes(4).toString('hex')}`;
const APPROVAL_ID = `apr_${randomBytes(16).toString('hex')}`;

let redis: Redis;
let workerRedis: Redis;
let results: Queue;
let worker: Worker;

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: PREFIX });
  workerRedis = createRedis(REDIS_URL, 'worker');
  worker = new Worker(
    TASKS_QUEUE,
    async (job, token) => {
      await job.updateProgress({
        status: 'awaiting_approval',
        approvals: [
          {
            id: APPROVAL_ID,
            tool: 'send_email',
            arguments: { to: 'ada@example.com' },
            expiresAt: '2026-12-08T09:00:00.000Z',
          },
        ],
        step: 2,
        maxSteps: 8,
      });
      await job.moveToDelayed(Date.now() + 86_400_000, token);
      throw new DelayedError();
    },
    { connection: workerRedis, prefix: PREFIX },
  );
});

afterAll(async () => {
  await worker?.close();
  workerRedis?.disconnect();
  await results?.close();
  if (redis) await deleteKeysWithPrefix(redis, PREFIX);
  redis?.disconnect();
});

it('prints one line naming the waiting calls, their ids and how to decide, then the result', async () => {
  const key = `cli-approval-${randomBytes(4).toString('hex')}`;
  const jobId = jobIdForKey(key);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'producers/cli.ts', '--task', 'Email Ada', '--idempotency-key', key, '--wait'],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, QUEUE_PREFIX: PREFIX, REDIS_URL, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));

  const deadline = Date.now() + 20_000;
  while (!stderr.includes('waiting for approval') && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  // Long enough for several more polls: the line is printed once while the job waits.
  await new Promise((resolve) => setTimeout(resolve, 800));
  const result: AgentResult = {
    jobId,
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'Sent.',
    steps: 3,
    toolCalls: 1,
    usage: { promptTokens: 900, completionTokens: 60, totalTokens: 960, costUsd: 0.01 },
    error: null,
  };
  await results.add(RESULT_JOB_NAME, result, { jobId: resultJobId(jobId) });

  expect(await closed).toBe(0);
  const waiting = stderr.split('\n').filter((line) => line.includes('waiting for approval'));
  expect(waiting).toEqual([
    `job ${jobId}: waiting for approval until 2026-12-08T09:00:00.000Z: send_email (${APPROVAL_ID}); decide with ` +
      'npm run approvals -- approve ID, or npm run approvals -- reject ID --reason "…"',
  ]);
  expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual(result);
}, 40_000);
