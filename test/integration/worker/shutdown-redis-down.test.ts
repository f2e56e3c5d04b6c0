// SIGTERM while Redis is away: running jobs cannot be handed back (that needs Redis), so the worker must not wait
// for it forever. It stops within its grace periods and says what it left behind; the jobs' locks expire and
// they are resumed elsewhere, as after a crash.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
} from '../../support/fleet-harness.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: PrivateRedis;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;

beforeAll(async () => {
  redis = await startPrivateRedis();
  // Every step takes a while, so the jobs are mid-run when Redis goes.
  model = await startScriptedModel({
    rules: [() => ({ actions: [{ tool: 'list_tables', args: {} }], latencyMs: 1_500 })],
  });
  ns = createNamespace('sdredis');
  client = new FleetClient({ redisUrl: redis.url, prefix: ns.prefix });
});

afterAll(async () => {
  await client.close();
  await ns.cleanup();
  await model.close();
  await redis.close();
});

it('a worker told to stop while Redis is down exits within its grace periods, not never', async () => {
  const GRACE_MS = 1_000;
  const w = startWorker(ns, {
    REDIS_URL: redis.url,
    OPENAI_BASE_URL: model.baseURL,
    AGENT_PROTOCOL: 'json',
    AGENT_MAX_COST_USD: '1',
    WORKER_CONCURRENCY: '2',
    WORKER_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    METRICS_PORT: '0',
  });
  try {
    await w.waitForOutput(/worker started/, 30_000);
    await client.enqueueMany([{ task: 'first' }, { task: 'second' }]);
    await w.waitForOutput(/"step":1/, 30_000);
    await client.close();
    await redis.kill();
    const signalled = Date.now();
    w.child.kill('SIGTERM');
    const outcome = await Promise.race([w.exited, sleep(40_000).then(() => 'still running' as const)]);
    expect(outcome, w.output()).not.toBe('still running');
    // Two graces (jobs, then side effects) and the margins; far below the 40 s the test waits.
    expect(Date.now() - signalled, w.output()).toBeLessThan(25_000);
    expect(w.output()).toMatch(/not handed back in time/);
    expect(w.output()).toMatch(/worker stopped/);
  } finally {
    await killWorker(w);
  }
}, 90_000);
