// A worker through a short Redis outage: a private redis-server is killed for about 2 s and started again. The
// worker says so once when it goes and once when it is back, with no stack traces, and keeps processing.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetClient } from '../producers/client.js';
import { freePort } from '../src/demo/free-port.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { createNamespace, killWorker, startWorker, type FleetNamespace } from './support/fleet-harness.js';
import { stepsModel } from './support/steps-model.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let port: number;
let redisServer: ChildProcess | undefined;
const redisDir = mkdtempSync(join(tmpdir(), 'af-redis-outage-'));

async function startRedis(): Promise<void> {
  redisServer = spawn(
    'redis-server',
    // Persistent, as a production Redis is: the outage loses the connection, not the jobs (a job whose keys
    // vanished fails its move with an error of its own, which is not what this test is about).
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--dir',
      redisDir,
    ],
    {
      stdio: 'ignore',
    },
  );
  const probe = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch {
        await sleep(50);
      }
    }
    throw new Error(`redis-server on port ${port} did not start`);
  } finally {
    probe.disconnect();
  }
}

async function stopRedis(): Promise<void> {
  const server = redisServer;
  if (!server || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
}

let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;

beforeAll(async () => {
  port = await freePort(0);
  await startRedis();
  model = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('outage');
  client = new FleetClient({ redisUrl: `redis://127.0.0.1:${port}`, prefix: ns.prefix });
});

afterAll(async () => {
  await client.close();
  await ns.cleanup();
  await model.close();
  await stopRedis();
  rmSync(redisDir, { recursive: true, force: true });
});

describe('a 2 s Redis outage', () => {
  it('logs one line when it starts, one when it ends, no stack trace; the worker keeps working', async () => {
    const w = startWorker(ns, {
      REDIS_URL: `redis://127.0.0.1:${port}`,
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
      await stopRedis();
      await sleep(2_000);
      await startRedis();
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
