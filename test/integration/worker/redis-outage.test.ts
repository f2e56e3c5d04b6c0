// A worker through a short Redis outage: a private redis-server is killed for about 2 s and started again. The
// worker says so once when it goes and once when it is back, with no stack traces, and keeps processing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
} from '../../support/fleet-harness.js';
import { startPrivateRedis, type PrivateRedis } from '../../support/private-redis.js';
import { stepsModel } from '../../support/steps-model.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: PrivateRedis;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;

beforeAll(async () => {
  // Persistent, as a production Redis is: the outage loses the connection, not the jobs.
  redis = await startPrivateRedis();
  model = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('outage');
  client = new FleetClient({ redisUrl: redis.url, prefix: ns.prefix });
});

afterAll(async () => {
  await client.close();
  await ns.cleanup();
  await model.close();
  await redis.close();
});

describe('a 2 s Redis outage', () => {
  it('logs one line when it starts, one when it ends, no stack trace; the worker keeps working', async () => {
    const w = startWorker(ns, {
      REDIS_URL: redis.url,
      OPENAI_BASE_URL: model.baseURL,
      AGENT_PROTOCOL: 'json',
      AGENT_MAX_COST_USD: '1',
      METRICS_PORT: '0',
    });
    try {
      await w.waitForOutput(/worker started/, 30_000);
      const before = await client.enqueue({ task: 'job before: 2 steps' });
      expect(await client.waitForResult(before.jobId, { timeoutMs: 20_000 })).toMatchObject({
        status: 'succeeded',
      });

      const mark = w.output().length;
      await redis.kill();
      await sleep(2_000);
      await redis.start();
      await w.waitForOutput(/redis reachable again/, 20_000);
      // Let any straggler report in before counting.
      await sleep(1_500);
      const during = w.output().slice(mark);
      const lines = during.split('\n').filter((line) => line.trim() !== '');
      expect(
        lines.filter((line) => /redis unreachable/.test(line)),
        during,
      ).toHaveLength(1);
      expect(
        lines.filter((line) => /redis reachable again/.test(line)),
        during,
      ).toHaveLength(1);
      expect(lines.length, during).toBeLessThanOrEqual(3);
      expect(during).not.toMatch(/\n\s+at |\\n\s+at /);
      expect(lines.find((line) => /redis unreachable/.test(line))).toMatch(/"code":"ECONNREFUSED"/);

      // The data went with the server (no persistence): the worker serves the new one all the same.
      const after = await client.enqueue({ task: 'job after: 2 steps' });
      expect(await client.waitForResult(after.jobId, { timeoutMs: 30_000 })).toMatchObject({
        status: 'succeeded',
      });
    } finally {
      await killWorker(w);
    }
  }, 90_000);
});
