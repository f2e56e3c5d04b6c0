// Tenants and rate-limit waits through a real worker process: a task's tenant ends in its agent_runs row, a job
// whose tenant is at TENANT_CONCURRENCY is counted as a tenant delay on /metrics, and calls held by the fleet's
// pause (asked by the endpoint's x-ratelimit headers) are counted as waits, by model and reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/demo/free-port.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let metricsPort: number;

beforeAll(async () => {
  // 1,500 tokens per second, refilled steadily: a run's calls outpace it, so the headers pause the fleet.
  server = await startScriptedModel({
    rules: [stepsModel],
    latencyMs: 100,
    rateLimits: { tokensPerMinute: 1_500, windowMs: 1_000 },
  });
  ns = createNamespace('tenantmetrics');
  metricsPort = await freePort(0);
  worker = startWorker(ns, {
    OPENAI_BASE_URL: server.baseURL,
    AGENT_PROTOCOL: 'json',
    WORKER_CONCURRENCY: '3',
    TENANT_CONCURRENCY: '1',
    AGENT_MAX_COST_USD: '1',
    METRICS_PORT: String(metricsPort),
  });
  await worker.waitForOutput(/worker started/);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await server?.close();
});

const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

/** The sum of a metric's samples whose labels match. */
function total(page: string, pattern: RegExp): number {
  return [...page.matchAll(pattern)].reduce((sum, match) => sum + Number(match[1]), 0);
}

describe('tenants and waits through a worker', () => {
  it("stores each task's tenant, and counts tenant delays and rate-limit waits on /metrics", async () => {
    const jobs = await Promise.all([
      ns.client.enqueue({ task: 'job a1: 3 steps', tenant: 'acme' }),
      ns.client.enqueue({ task: 'job a2: 3 steps', tenant: 'acme' }),
      ns.client.enqueue({ task: 'job g1: 3 steps', tenant: 'globex' }),
      ns.client.enqueue({ task: 'job n1: 3 steps' }),
    ]);
    const results = await Promise.all(
      jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
    );
    for (const result of results) expect(result).toMatchObject({ status: 'succeeded' });

    const rows = await queryStore<{ job_id: string; tenant: string | null }>(
      ns,
      'SELECT job_id, tenant FROM agent_runs WHERE job_id IN (?)',
      [jobs.map((job) => job.jobId)],
    );
    const tenantOf = new Map(rows.map((row) => [row.job_id, row.tenant]));
    expect(jobs.map((job) => tenantOf.get(job.jobId))).toEqual(['acme', 'acme', 'globex', null]);

    const page = await scrape();
    // Two of acme's jobs with room for three: the second waited for the first's slot at least once.
    expect(total(page, /^agentfleet_tenant_delays_total\{tenant="acme"\} (\d+)$/gm)).toBeGreaterThan(0);
    expect(page).not.toMatch(/^agentfleet_tenant_delays_total\{tenant="globex"\}/m);
    // The endpoint's headers paused the fleet (three calls at once may still meet a 429, counted apart), and
    // calls waited for the pause.
    expect(
      total(
        page,
        /^agentfleet_rate_limit_pauses_total\{model="gpt-4-turbo-preview",cause="headers"\} (\d+)$/gm,
      ),
    ).toBeGreaterThan(0);
    expect(
      total(
        page,
        /^agentfleet_model_call_wait_seconds_count\{model="gpt-4-turbo-preview",reason="pause"\} (\d+)$/gm,
      ),
    ).toBeGreaterThan(0);
  }, 90_000);
});
