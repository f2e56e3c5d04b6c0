// Overnight batches end to end: a 100-task batch through two worker processes, a batch whose budget runs out
// halfway, and a 429 storm that slows the fleet without failing a job.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
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
import { requestsFor, stepsModel } from '../../support/steps-model.js';
import { freePort } from '../../../src/demo/free-port.js';
import { TASK_JOB_NAME, TASKS_QUEUE } from '../../../src/queue/names.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];
const metricsPorts: number[] = [];

beforeAll(async () => {
  // A realistic latency: work overlaps across jobs and workers.
  server = await startScriptedModel({ rules: [stepsModel], latencyMs: 100 });
  ns = createNamespace('batches');
  for (let i = 0; i < 2; i++) {
    metricsPorts.push(await freePort(0));
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: server.baseURL,
        AGENT_PROTOCOL: 'json',
        WORKER_CONCURRENCY: '10',
        AGENT_MAX_COST_USD: '1',
        METRICS_PORT: String(metricsPorts[i]),
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/)));
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns.cleanup();
  await server.close();
});

async function publishedResults(jobIds: readonly string[]): Promise<AgentResult[]> {
  const results = await Promise.all(jobIds.map((id) => ns.client.getResult(id)));
  return results.filter((r): r is AgentResult => r !== null);
}

const sum = (results: readonly AgentResult[], pick: (r: AgentResult) => number) =>
  results.reduce((total, r) => total + pick(r), 0);

describe('batches', () => {
  it('a 100-task batch through 2 workers: every task done once, totals equal the tasks and agent_runs', async () => {
    const tasks = Array.from({ length: 100 }, (_, i) => ({ task: `job n${i}: ${1 + (i % 3)} steps` }));
    const { batchId, jobIds } = await ns.client.enqueueBatch({ tasks, name: 'nightly test' });
    expect(jobIds).toHaveLength(100);
    const status = await ns.client.waitForBatch(batchId, { timeoutMs: 120_000 });
    expect(status.state).toBe('completed');
    const { summary } = status;
    expect(summary).toMatchObject({ batchId, tasks: 100, succeeded: 100, stopped: 0, failed: 0 });

    const results = await publishedResults(jobIds);
    expect(results).toHaveLength(100);
    expect(summary.usage.promptTokens).toBe(sum(results, (r) => r.usage.promptTokens));
    expect(summary.usage.completionTokens).toBe(sum(results, (r) => r.usage.completionTokens));
    expect(summary.usage.costUsd).toBeCloseTo(
      sum(results, (r) => r.usage.costUsd),
      9,
    );
    for (let i = 0; i < 100; i++) expect(requestsFor(server, `n${i}`)).toHaveLength(1 + (i % 3));

    const [runs] = await queryStore<{ n: number; prompt: string; cost: string }>(
      ns,
      'SELECT COUNT(*) AS n, SUM(prompt_tokens) AS prompt, SUM(cost_usd) AS cost FROM agent_runs WHERE batch_id = ?',
      [batchId],
    );
    expect(Number(runs!.n)).toBe(100);
    expect(Number(runs!.prompt)).toBe(summary.usage.promptTokens);
    expect(Number(runs!.cost)).toBeCloseTo(summary.usage.costUsd, 8);
    const [batch] = await queryStore<{ state: string; summary: unknown }>(
      ns,
      'SELECT state, summary FROM agent_batches WHERE batch_id = ?',
      [batchId],
    );
    expect(batch?.state).toBe('completed');
    const stored = typeof batch?.summary === 'string' ? JSON.parse(batch.summary) : batch?.summary;
    expect(stored).toEqual(summary);
    // Both processes took part.
    for (const worker of workers) expect(worker.output()).toMatch(/"batch|run finished/);

    // The report, as an operator runs it in the morning.
    const out = await mkdtemp(join(tmpdir(), 'af-report-'));
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'scripts/report.ts', '--batch', batchId, '--out', out],
        {
          env: { ...process.env, MYSQL_URL: ns.mysqlUrl },
        },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
      const printed = JSON.parse(stdout.trim().split('\n').at(-1)!) as typeof summary;
      expect(printed).toMatchObject({ batchId, tasks: 100, succeeded: 100 });
      expect(printed.usage.totalTokens).toBe(summary.usage.totalTokens);
      const html = await readFile(join(out, `${batchId}.html`), 'utf8');
      expect(html).toMatch(/<svg/);
      expect(await readFile(join(out, `${batchId}.md`), 'utf8')).toMatch(/\| n99|job n99/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 180_000);

  it('a task that fails does not block the others, and the batch still completes', async () => {
    server.reset({
      rules: [
        (request) =>
          String(request.messages[1]?.content).startsWith('job broken')
            ? { fault: 'unauthorized' }
            : undefined,
        stepsModel,
      ],
    });
    const tasks = ['job ok1: 2 steps', 'job broken: 2 steps', 'job ok2: 1 steps'].map((task) => ({ task }));
    const { batchId, jobIds } = await ns.client.enqueueBatch({ tasks });
    const status = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
    expect(status.state).toBe('completed');
    expect(status.summary).toMatchObject({ tasks: 3, succeeded: 2, failed: 1 });
    const failed = await ns.client.getResult(jobIds[1]!);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'http_401' } });
    server.reset({ rules: [stepsModel] });
  }, 90_000);

  it('the workers report jobs, steps, tokens, cost, store writes and queue depth on /metrics', async () => {
    const pages = await Promise.all(
      metricsPorts.map(async (port) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()),
    );
    const total = (name: RegExp) =>
      pages.reduce((sum, page) => sum + [...page.matchAll(name)].reduce((s, m) => s + Number(m[1]), 0), 0);
    expect(total(/^agentfleet_jobs_total\{outcome="succeeded"[^}]*\} (\d+)$/gm)).toBeGreaterThanOrEqual(100);
    expect(total(/^agentfleet_steps_total\{[^}]*\} (\d+)$/gm)).toBeGreaterThan(100);
    expect(total(/^agentfleet_tokens_total\{type="prompt"\} (\d+)$/gm)).toBeGreaterThan(0);
    expect(pages[0]).toMatch(/^agentfleet_cost_usd_total \d/m);
    expect(pages[0]).toMatch(/^agentfleet_model_call_duration_seconds_count \d+/m);
    // Every run's start, steps and finish went through the run journal: its queries were timed.
    expect(total(/^agentfleet_store_write_seconds_count (\d+)$/gm)).toBeGreaterThan(0);
    expect(pages[0]).toMatch(/^agentfleet_queue_jobs\{queue="agent-tasks",state="waiting"\} \d+/m);
  });

  it('a batch whose budget runs out halfway stops there, and the ledger is never exceeded', async () => {
    // Each task costs about a cent at gpt-4-turbo prices; the cap pays for about half of them.
    const cap = 0.05;
    const tasks = Array.from({ length: 12 }, (_, i) => ({ task: `job cap${i}: 2 steps` }));
    const { batchId, jobIds } = await ns.client.enqueueBatch({ tasks, budget: { maxCostUsd: cap } });
    const { summary, state } = await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
    expect(state).toBe('completed');
    expect(summary.tasks).toBe(12);
    expect(summary.succeeded).toBeGreaterThan(0);
    expect(summary.stopped).toBeGreaterThan(0);
    expect(summary.failed).toBe(0);
    expect(summary.usage.costUsd).toBeLessThanOrEqual(cap);

    const results = await publishedResults(jobIds);
    const stopped = results.filter((r) => r.status === 'stopped');
    expect(stopped.every((r) => r.stopReason === 'cost_budget')).toBe(true);
    // A task that could not be covered at all never called the model.
    for (const result of stopped.filter((r) => r.steps === 0)) {
      const name = `cap${jobIds.indexOf(result.jobId)}`;
      expect(requestsFor(server, name)).toHaveLength(0);
    }
    expect(stopped.some((r) => r.steps === 0)).toBe(true);

    const redis = new Redis(REDIS_URL);
    try {
      const spend = await new SpendLedger({ redis, prefix: ns.prefix }).getSpend(batchScope(batchId));
      expect(spend.usedUsd).toBeLessThanOrEqual(cap);
      expect(spend.reservedUsd).toBe(0);
      expect(spend.usedUsd).toBeGreaterThanOrEqual(summary.usage.costUsd);
    } finally {
      redis.disconnect();
    }
  }, 90_000);

  it('a job that only names a batch in metadata.batch runs outside it: not charged, not counted', async () => {
    const { batchId } = await ns.client.enqueueBatch({
      tasks: [{ task: 'job member: 1 steps' }],
      budget: { maxCostUsd: 1 },
    });
    await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
    const redis = new Redis(REDIS_URL);
    const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
    try {
      const ledger = new SpendLedger({ redis, prefix: ns.prefix });
      const spentBefore = await ledger.getSpend(batchScope(batchId));
      // Straight into Redis, as a producer that skipped the client's refusal would.
      const job = await tasks.add(TASK_JOB_NAME, {
        task: 'job claimer: 2 steps',
        metadata: { batch: batchId },
      });
      const result = await ns.client.waitForResult(String(job.id), { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'succeeded' });
      expect(result.usage.costUsd).toBeGreaterThan(0);
      expect(await ledger.getSpend(batchScope(batchId))).toEqual(spentBefore);
      const [run] = await queryStore<{ batch_id: string | null }>(
        ns,
        'SELECT batch_id FROM agent_runs WHERE job_id = ?',
        [String(job.id)],
      );
      expect(run?.batch_id).toBeNull();
      const [runs] = await queryStore<{ n: number }>(
        ns,
        'SELECT COUNT(*) AS n FROM agent_runs WHERE batch_id = ?',
        [batchId],
      );
      expect(Number(runs!.n)).toBe(1);
    } finally {
      await tasks.close();
      redis.disconnect();
    }
  }, 90_000);

  it('a 429 storm slows the fleet without failing a job', async () => {
    let storm = 12;
    server.reset({
      rules: [
        (request) => {
          if (String(request.messages[1]?.content).startsWith('job storm') && storm > 0) {
            storm--;
            return { fault: 'rate_limit', retryAfterSeconds: 1 };
          }
          return undefined;
        },
        stepsModel,
      ],
    });
    const tasks = Array.from({ length: 10 }, (_, i) => ({ task: `job storm${i}: 2 steps` }));
    const { batchId, jobIds } = await ns.client.enqueueBatch({ tasks });
    const { summary } = await ns.client.waitForBatch(batchId, { timeoutMs: 90_000 });
    expect(summary).toMatchObject({ tasks: 10, succeeded: 10, failed: 0 });
    expect(storm).toBe(0);
    const results = await publishedResults(jobIds);
    expect(results.every((r) => r.status === 'succeeded')).toBe(true);
    // Every job finished on its first attempt: the 429s were waited out, not burnt as retries.
    const [runs] = await queryStore<{ attempts: number }>(
      ns,
      'SELECT MAX(attempts) AS attempts FROM agent_runs WHERE batch_id = ?',
      [batchId],
    );
    expect(runs?.attempts).toBe(1);
    expect(workers.some((w) => /rate.?limit|429/i.test(w.output()))).toBe(true);
    server.reset({ rules: [stepsModel] });
  }, 120_000);
});
