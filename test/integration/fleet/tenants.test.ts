// Per-tenant concurrency through two worker processes (TENANT_CONCURRENCY=1, one job at a time per worker): a
// tenant at its limit waits in `delayed`, holding no worker slot, so the other tenant's jobs run meanwhile; a
// slot whose worker died is free again once its lease expires.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenantSlots } from '../../../src/fleet/tenant-slots.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { requestsFor, stepsModel } from '../../support/steps-model.js';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let redis: Redis;
const workers: WorkerHandle[] = [];
const LATENCY_MS = 250;
/** A killed worker's lock (and tenant lease) ends within seconds, not a minute. */
const FAST_LEASES = { WORKER_LOCK_DURATION_MS: '3000', WORKER_STALLED_INTERVAL_MS: '1000' };

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel], latencyMs: LATENCY_MS });
  ns = createNamespace('tenants');
  redis = new Redis(REDIS_URL);
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: server.baseURL,
        AGENT_PROTOCOL: 'json',
        WORKER_CONCURRENCY: '1',
        TENANT_CONCURRENCY: '1',
        AGENT_MAX_COST_USD: '1',
        METRICS_PORT: '0',
        ...FAST_LEASES,
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/)));
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  redis?.disconnect();
  await ns?.cleanup();
  await server?.close();
});

/** When a job's first request arrived and its last reply went out (the server's clock). */
function spanOf(name: string): { from: number; to: number } {
  const requests = requestsFor(server, name);
  return {
    from: Math.min(...requests.map((r) => r.receivedAt)),
    to: Math.max(...requests.map((r) => r.receivedAt)) + LATENCY_MS,
  };
}

describe('tenant concurrency', () => {
  it('a tenant at its limit waits without holding a worker slot: the other tenant runs meanwhile', async () => {
    const acme = ['a1', 'a2', 'a3', 'a4'];
    const globex = ['g1', 'g2'];
    // Acme's jobs first, so without tenant limits (or with waits that held a slot) they would take both workers.
    const acmeJobs = await Promise.all(
      acme.map((name) => ns.client.enqueue({ task: `job ${name}: 2 steps`, tenant: 'acme' })),
    );
    const globexJobs = await Promise.all(
      globex.map((name) => ns.client.enqueue({ task: `job ${name}: 2 steps`, tenant: 'globex' })),
    );
    const results = await Promise.all(
      [...acmeJobs, ...globexJobs].map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
    );
    for (const result of results) expect(result).toMatchObject({ status: 'succeeded' });

    // Never two of acme's jobs at once, across both workers.
    const spans = acme.map(spanOf).sort((x, y) => x.from - y.from);
    for (let i = 1; i < spans.length; i++)
      expect(spans[i]!.from).toBeGreaterThanOrEqual(spans[i - 1]!.to - 5);
    // Globex was not held up behind acme's queue: both its jobs ended before acme's last one started.
    const lastAcmeStart = Math.max(...spans.map((s) => s.from));
    for (const name of globex) expect(spanOf(name).to).toBeLessThanOrEqual(lastAcmeStart + 5);
    // Every slot was given back.
    const slots = new TenantSlots({ redis, prefix: ns.prefix, limit: 1 });
    expect(await slots.holders('acme')).toEqual([]);
    expect(await slots.holders('globex')).toEqual([]);
  }, 90_000);

  it('a worker killed while holding a slot: the job resumes elsewhere with its slot, the tenant is not stuck', async () => {
    const slow = { task: 'job k1: 3 steps', tenant: 'initech' };
    server.reset({ rules: [(r) => ({ ...stepsModel(r), latencyMs: 600 })] });
    const k1 = await ns.client.enqueue(slow);
    const deadline = Date.now() + 20_000;
    while (requestsFor(server, 'k1').length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const slots = new TenantSlots({ redis, prefix: ns.prefix, limit: 1 });
    expect(await slots.holders('initech')).toEqual([k1.jobId]);
    // Both workers die at once: nobody gives the slot back.
    await Promise.all(workers.splice(0).map(killWorker));
    server.reset({ rules: [stepsModel] });
    const k2 = await ns.client.enqueue({ task: 'job k2: 1 steps', tenant: 'initech' });
    const fresh = startWorker(ns, {
      OPENAI_BASE_URL: server.baseURL,
      AGENT_PROTOCOL: 'json',
      WORKER_CONCURRENCY: '2',
      TENANT_CONCURRENCY: '1',
      AGENT_MAX_COST_USD: '1',
      METRICS_PORT: '0',
      ...FAST_LEASES,
    });
    workers.push(fresh);
    const [r1, r2] = await Promise.all([
      ns.client.waitForResult(k1.jobId, { timeoutMs: 60_000 }),
      ns.client.waitForResult(k2.jobId, { timeoutMs: 60_000 }),
    ]);
    expect(r1).toMatchObject({ status: 'succeeded' });
    expect(r2).toMatchObject({ status: 'succeeded' });
    expect(await slots.holders('initech')).toEqual([]);
  }, 90_000);

  it('a task with a bad tenant is refused at enqueue, naming the field', async () => {
    await expect(ns.client.enqueue({ task: 'job x: 1 steps', tenant: 'no spaces allowed' })).rejects.toThrow(
      /tenant: must be a tenant name/,
    );
  });
});
