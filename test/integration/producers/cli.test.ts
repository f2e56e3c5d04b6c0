// The producer CLI as a process (`node --import tsx producers/cli.ts`) against the real Redis of REDIS_URL,
// under a queue prefix of its own (test-cli-<random>) that is obliterated at the end. There is no worker:
// the --wait tests play the worker's part by setting progress and publishing the result themselves.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { jobIdForKey } from '../../../src/queue/job-options.js';
import { RESULT_JOB_NAME, resultJobId, RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

const ROOT = REPO_ROOT;
const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-cli-${randomBytes(4).toString('hex')}`;

let redis: Redis;
let tasks: Queue;
let results: Queue;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'producers/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, QUEUE_PREFIX: PREFIX, REDIS_URL, LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function lines(text: string): string[] {
  return text.split('\n').filter(Boolean);
}

async function jobCount(): Promise<number> {
  const counts = await tasks.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

async function waitForJob(jobId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await tasks.getJob(jobId))) {
    if (Date.now() > deadline) throw new Error(`job ${jobId} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function resultFor(jobId: string, status: AgentResult['status']): AgentResult {
  return {
    jobId,
    status,
    stopReason: status === 'succeeded' ? 'answer' : 'max_steps',
    answer: status === 'succeeded' ? 'Alice, Bob and Carol' : null,
    steps: 3,
    toolCalls: 2,
    usage: { promptTokens: 2000, completionTokens: 140, totalTokens: 2140, costUsd: 0.0241 },
    error: null,
  };
}

beforeAll(() => {
  redis = createRedis(REDIS_URL, 'producer');
  tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: PREFIX });
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix: PREFIX });
});

afterAll(async () => {
  await tasks?.obliterate({ force: true });
  await results?.obliterate({ force: true });
  await tasks?.close();
  await results?.close();
  // Batches leave a parent queue under the prefix too.
  if (redis) await deleteKeysWithPrefix(redis, PREFIX);
  redis?.disconnect();
});

describe('npm run enqueue', () => {
  it('enqueues the task and prints {"jobId"} alone on stdout', async () => {
    const run = await cli(['--task', 'Find the top 3 customers', '--max-steps', '4', '--tools', 'sql_query']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(lines(run.stdout)).toHaveLength(1);
    const { jobId } = JSON.parse(run.stdout) as { jobId: string };
    const job = await tasks.getJob(jobId);
    expect(job?.name).toBe('default: Find the top 3 customers');
    expect(job?.data).toEqual({
      task: 'Find the top 3 customers',
      budget: { maxSteps: 4 },
      tools: ['sql_query'],
    });
  });

  it('refuses a bad task with exit 2 and the field paths on one stderr line, enqueuing nothing', async () => {
    const before = await jobCount();
    const run = await cli(['--task', 'x', '--max-steps', '0', '--tools', 'sql_query,rm_rf']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain('budget.maxSteps');
    expect(run.stderr).toContain('--max-steps');
    expect(run.stderr).toContain('tools.1');
    expect(await jobCount()).toBe(before);
  });

  it('refuses a bad number or an unknown flag with exit 2 and the usage line', async () => {
    const bad = await cli(['--task', 'x', '--max-steps', 'abc']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-steps');
    expect(bad.stderr).toContain('usage: npm run enqueue');
    const unknown = await cli(['--task', 'x', '--frobnicate']);
    expect(unknown.code).toBe(2);
    expect(lines(unknown.stderr)[0]).toBe('error: unknown option --frobnicate');
    expect(unknown.stderr).toContain('usage: npm run enqueue');
  });

  it('exits 1 with one line naming REDIS_URL when Redis is down', async () => {
    const run = await cli(['--task', 'x'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain('REDIS_URL=redis://127.0.0.1:1');
  });

  it('exits 1 with a line naming the variable when the environment is bad', async () => {
    const run = await cli(['--task', 'x'], { QUEUE_PREFIX: 'bad prefix!' });
    expect(run.code).toBe(1);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain('QUEUE_PREFIX');
  });
});

describe('npm run enqueue -- --wait', () => {
  it('follows progress on stderr and prints the result as the last stdout line, exit 0 on success', async () => {
    const key = `cli-wait-${randomBytes(4).toString('hex')}`;
    const jobId = jobIdForKey(key);
    const running = cli(['--task', 'Thank the top customers', '--idempotency-key', key, '--wait']);
    await waitForJob(jobId);
    await tasks.updateJobProgress(jobId, {
      step: 3,
      maxSteps: 8,
      totalTokens: 2140,
      costUsd: 0.0241,
      toolCalls: 2,
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const result = resultFor(jobId, 'succeeded');
    await results.add(RESULT_JOB_NAME, result, { jobId: resultJobId(jobId) });

    const run = await running;
    expect(run.code).toBe(0);
    const out = lines(run.stdout);
    expect(JSON.parse(out[0]!)).toEqual({ jobId });
    expect(JSON.parse(out.at(-1)!)).toEqual(result);
    expect(run.stderr).toContain(`job ${jobId}: step 3/8 · 2,140 tokens · $0.0241 · 2 tool calls`);
  });

  it('exits 1 when the job stopped instead of succeeding', async () => {
    const key = `cli-stop-${randomBytes(4).toString('hex')}`;
    const jobId = jobIdForKey(key);
    const running = cli(['--task', 'Too much work', '--idempotency-key', key, '--wait', '--timeout', '20']);
    await waitForJob(jobId);
    await results.add(RESULT_JOB_NAME, resultFor(jobId, 'stopped'), { jobId: resultJobId(jobId) });
    const run = await running;
    expect(run.code).toBe(1);
    expect(JSON.parse(lines(run.stdout).at(-1)!)).toMatchObject({ jobId, status: 'stopped' });
  });

  it('exits 124 when --timeout passes first', async () => {
    const run = await cli(['--task', 'Nobody works here', '--wait', '--timeout', '1']);
    expect(run.code).toBe(124);
    expect(lines(run.stdout)).toHaveLength(1);
    expect(run.stderr).toContain('--timeout');
  });
});

describe('refusals of hostile tasks, with the field path and nothing enqueued', () => {
  it('a task of invisible characters only', async () => {
    const before = await jobCount();
    const run = await cli(['--task', '\u200B\u2060\u180E\u0085']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/task \(--task\): must contain at least one visible character/);
    expect(await jobCount()).toBe(before);
  });

  it('--metadata batch=<an existing batch>', async () => {
    const client = new FleetClient({ redisUrl: REDIS_URL, prefix: PREFIX });
    const { batchId } = await client.enqueueBatch({ tasks: [{ task: 'member' }] });
    await client.close();
    const before = await jobCount();
    const run = await cli(['--task', 'join it', '--metadata', `batch=${batchId}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/metadata\.batch( \(--metadata\))?: names the existing batch/);
    expect(await jobCount()).toBe(before);
  });

  it('a batch file with a line too wide or invisible names each line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cli-batch-'));
    try {
      const wide = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, 1]));
      const file = join(dir, 'tasks.jsonl');
      const deep = `{"task":"x","metadata":${'['.repeat(40)}${']'.repeat(40)}}`;
      const lines = [{ task: 'fine' }, { task: 'x', metadata: wide }, { task: '\u200B\u0000' }];
      await writeFile(file, [...lines.map((line) => JSON.stringify(line)), deep].join('\n'));
      const before = await jobCount();
      const run = await cli(['--batch', file]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('line 2: the task has an object of more than 100 keys');
      expect(run.stderr).toContain('line 3: task: must contain at least one visible character');
      expect(run.stderr).toContain('line 4: the task nests objects and arrays deeper than 32 levels');
      expect(await jobCount()).toBe(before);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
