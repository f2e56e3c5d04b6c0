// The fleet end to end: tasks through real worker processes, the scripted model over HTTP, results on the
// agent-results queue, in the client and in MySQL; shutdown and crashes that lose nothing.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnsIn } from '../../../src/testing/transcript.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
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
import { requestsFor, stepOf, stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];

function worker(env: Record<string, string> = {}): WorkerHandle {
  // Real tools answer at length: a budget that six steps of them fit in. Every worker checks for stalled
  // jobs as often: BullMQ lets one checker run per interval fleet wide, so one worker at the default 30 s
  // would hold back the crash recovery under test.
  const handle = startWorker(ns, {
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'json',
    AGENT_MAX_COST_USD: '1',
    ...env,
  });
  workers.push(handle);
  return handle;
}

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('fleet');
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns.cleanup();
  await server.close();
});

describe('a worker process', () => {
  it('runs a task and gives the same result on the queue, through the client and in MySQL', async () => {
    const w = worker();
    await w.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({ task: 'job alpha: 3 steps', metadata: { report: 'r1' } });
    const progress: unknown[] = [];
    const result = await ns.client.waitForResult(jobId, {
      timeoutMs: 20_000,
      onProgress: (p) => progress.push(p),
    });
    expect(result).toMatchObject({
      jobId,
      status: 'succeeded',
      stopReason: 'answer',
      answer: 'alpha done in 3 steps',
      steps: 3,
      toolCalls: 2,
      error: null,
    });

    // The result is published just before BullMQ moves the job to completed.
    await expect.poll(async () => (await ns.client.getTask(jobId)).state).toBe('completed');
    const status = await ns.client.getTask(jobId);
    expect(status.result).toEqual(result);
    expect(status.progress).toMatchObject({ step: 3, maxSteps: 8, totalTokens: result.usage.totalTokens });

    const [run] = await queryStore<Record<string, unknown>>(ns, 'SELECT * FROM agent_runs WHERE job_id = ?', [
      jobId,
    ]);
    expect(run).toMatchObject({
      status: 'succeeded',
      stop_reason: 'answer',
      answer: result.answer,
      steps: 3,
      tool_calls: 2,
      prompt_tokens: result.usage.promptTokens,
      completion_tokens: result.usage.completionTokens,
    });
    expect(Number(run!.cost_usd)).toBeCloseTo(result.usage.costUsd, 9);
    const steps = await queryStore<{ step: number; kind: string; prompt_tokens: number }>(
      ns,
      'SELECT step, kind, prompt_tokens FROM agent_steps WHERE job_id = ? ORDER BY step',
      [jobId],
    );
    expect(steps.map((s) => [s.step, s.kind])).toEqual([
      [1, 'action'],
      [2, 'action'],
      [3, 'answer'],
    ]);
    expect(steps.reduce((sum, s) => sum + s.prompt_tokens, 0)).toBe(result.usage.promptTokens);
    // Job logs show one line per step.
    const tasks = new Queue(TASKS_QUEUE, {
      connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }),
      prefix: ns.prefix,
    });
    const { logs } = await tasks.getJobLogs(jobId);
    expect(logs).toHaveLength(3);
    expect(logs[0]).toMatch(/^step 1\/8: list_tables/);
    await tasks.close();
  });

  it('fails an invalid job without retrying, and still publishes its result', async () => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
    // Enqueued behind the producers' back, as a buggy service might.
    const job = await tasks.add('agent-task', { task: '', tools: ['rm_rf'] }, { attempts: 3, backoff: 10 });
    const result = await ns.client.waitForResult(String(job.id), { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', steps: 0 });
    expect(result.error).toMatchObject({ kind: 'input', code: 'invalid_task', retryable: false });
    expect(result.error?.message).toMatch(/task: must not be empty/);
    expect(result.error?.message).toMatch(/tools\.0/);
    // The result is published just before the job is moved to failed.
    await expect.poll(async () => (await tasks.getJob(String(job.id)))?.getState()).toBe('failed');
    const failed = await tasks.getJob(String(job.id));
    expect(failed?.attemptsMade).toBe(1);
    await tasks.close();
    connection.disconnect();
  });

  it('hands a retryable failure to BullMQ, which retries it from the checkpoint', async () => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
    let failuresLeft = 4; // the step's own 3 retries + the first attempt: the job's first attempt fails
    server.reset({
      rules: [
        (request) => {
          const task = String(request.messages[1]?.content);
          // Past step 1, whatever the memory's layout (verbatim turns or facts).
          if (task.startsWith('job beta:') && turnsIn(request.messages) > 0 && failuresLeft > 0) {
            failuresLeft--;
            return { fault: 'server_error' };
          }
          return undefined;
        },
        stepsModel,
      ],
    });
    const job = await tasks.add('agent-task', { task: 'job beta: 3 steps' }, { attempts: 3, backoff: 50 });
    const result = await ns.client.waitForResult(String(job.id), { timeoutMs: 30_000 });
    expect(result).toMatchObject({ status: 'succeeded', steps: 3 });
    const reloaded = await tasks.getJob(String(job.id));
    expect(reloaded?.attemptsMade).toBe(2);
    // Step 1 was finished before the failure: it was not asked again.
    const firstStep = requestsFor(server, 'beta').filter((r) => r.messages.length === 2);
    expect(firstStep).toHaveLength(1);
    const [run] = await queryStore<{ attempts: number }>(
      ns,
      'SELECT attempts FROM agent_runs WHERE job_id = ?',
      [String(job.id)],
    );
    expect(run?.attempts).toBe(2);
    server.reset({ rules: [stepsModel] });
    await tasks.close();
    connection.disconnect();
  });
});

describe('a job started for the first time', () => {
  it('runs from scratch, whatever an earlier job of the same id left under its checkpoint key', async () => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
    try {
      const jobId = 'reused-id-1';
      // A finished run's checkpoint that was never deleted (its worker died right after publishing).
      const stale = {
        version: 1,
        runId: jobId,
        task: 'job gamma: 2 steps',
        protocol: 'json',
        result: { jobId, status: 'succeeded', stopReason: 'answer', answer: 'stale answer', steps: 9 },
      };
      await connection.set(`${ns.prefix}:agent-checkpoint:${jobId}`, JSON.stringify(stale), 'EX', 600);
      worker();
      await tasks.add('agent-task', { task: 'job gamma: 2 steps' }, { jobId });
      const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'succeeded', steps: 2 });
      expect(result.answer).not.toBe('stale answer');
      expect(requestsFor(server, 'gamma')).toHaveLength(2);
    } finally {
      await tasks.close();
      connection.disconnect();
    }
  });
});

describe('shutdown and crashes', () => {
  it('SIGTERM lets a running job finish within the grace period, then exits 0', async () => {
    const w = worker({ WORKER_SHUTDOWN_GRACE_MS: '20000' });
    await w.waitForOutput(/worker started/);
    server.reset({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 300 })] });
    const before = workers.length;
    // Only this worker runs from here: stop the one of the first test.
    await Promise.all(workers.slice(0, before - 1).map(killWorker));
    const { jobId } = await ns.client.enqueue({ task: 'job gamma: 4 steps' });
    await w.waitForOutput(/"jobId":"[^"]+","attempt":1,"step":1/);
    w.child.kill('SIGTERM');
    const exit = await w.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const result = await ns.client.getResult(jobId);
    expect(result).toMatchObject({ status: 'succeeded', steps: 4 });
    server.reset({ rules: [stepsModel] });
  });

  it('SIGTERM past the grace period checkpoints the job and releases it; another worker resumes it', async () => {
    server.reset({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 400 })] });
    const first = worker({ WORKER_SHUTDOWN_GRACE_MS: '100' });
    await first.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({ task: 'job delta: 6 steps' });
    await first.waitForOutput(/"attempt":1,"step":2/);
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(first.output()).toMatch(/released on shutdown/);
    expect(await ns.client.getResult(jobId)).toBeNull();

    const second = worker();
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result).toMatchObject({ status: 'succeeded', steps: 6, answer: 'delta done in 6 steps' });
    expect(second.output()).toMatch(/resuming from checkpoint/);
    // One request per step, plus at most the call that was in flight when the first worker let go.
    expect(requestsFor(server, 'delta').length).toBeLessThanOrEqual(7);
    const steps = await queryStore<{ step: number }>(
      ns,
      'SELECT step FROM agent_steps WHERE job_id = ? ORDER BY step',
      [jobId],
    );
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6]);
    await killWorker(second);
    server.reset({ rules: [stepsModel] });
  });

  it('a worker killed with SIGKILL mid-run has its job resumed by another from the last checkpoint', async () => {
    server.reset({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 300 })] });
    const doomed = worker();
    await doomed.waitForOutput(/worker started/);
    const { jobId } = await ns.client.enqueue({ task: 'job epsilon: 6 steps' });
    await doomed.waitForOutput(/"attempt":1,"step":3/);
    doomed.child.kill('SIGKILL');
    await doomed.exited;

    const rescuer = worker();
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 40_000 });
    expect(result).toMatchObject({ status: 'succeeded', steps: 6, answer: 'epsilon done in 6 steps' });
    expect(rescuer.output()).toMatch(/resuming from checkpoint/);
    const requests = requestsFor(server, 'epsilon');
    // No finished step asked again: 6 steps, plus at most the call in flight at the kill.
    expect(requests.length).toBeLessThanOrEqual(7);
    const stepCounts = new Map<number, number>();
    for (const r of requests) stepCounts.set(stepOf(r), (stepCounts.get(stepOf(r)) ?? 0) + 1);
    expect([...stepCounts.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(1);
    const steps = await queryStore<{ step: number }>(
      ns,
      'SELECT step FROM agent_steps WHERE job_id = ? ORDER BY step',
      [jobId],
    );
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6]);
    await killWorker(rescuer);
    server.reset({ rules: [stepsModel] });
  }, 60_000);

  it('two workers share 50 tasks, each done exactly once', async () => {
    const a = worker({ WORKER_CONCURRENCY: '5' });
    const b = worker({ WORKER_CONCURRENCY: '5' });
    await Promise.all([a.waitForOutput(/worker started/), b.waitForOutput(/worker started/)]);
    const tasks = Array.from({ length: 50 }, (_, i) => ({ task: `job batch${i}: 2 steps` }));
    const jobs = await ns.client.enqueueMany(tasks);
    const results: AgentResult[] = await Promise.all(
      jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
    );
    expect(results.every((r) => r.status === 'succeeded' && r.steps === 2)).toBe(true);
    expect(new Set(results.map((r) => r.jobId)).size).toBe(50);
    for (let i = 0; i < 50; i++) expect(requestsFor(server, `batch${i}`)).toHaveLength(2);
    const runs = await queryStore<{ n: number; attempts: number }>(
      ns,
      "SELECT COUNT(*) AS n, MAX(attempts) AS attempts FROM agent_runs WHERE task LIKE 'job batch%'",
    );
    expect(runs[0]).toMatchObject({ n: 50, attempts: 1 });
    // Both processes took part.
    expect(a.output()).toMatch(/run finished/);
    expect(b.output()).toMatch(/run finished/);
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const resultsQueue = new Queue(RESULTS_QUEUE, { connection, prefix: ns.prefix });
    const published = await resultsQueue.getJobs(['waiting', 'delayed', 'prioritized']);
    const batchResults = published.filter((job) => jobs.some(({ jobId }) => job.data.jobId === jobId));
    expect(batchResults).toHaveLength(50);
    await resultsQueue.close();
    connection.disconnect();
  }, 90_000);
});
