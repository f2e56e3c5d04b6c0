// The catalog workers publish, and every producer checking a task against it: the client (tasks and batches),
// the HTTP API and the CLI refuse an unknown agent or tool, a bad input or a budget above the ceiling with the
// field path, and enqueue nothing. Workers serving different catalogs say so in their log and metrics.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskValidationError } from '../../../src/client/fleet-client.js';
import { createApiServer } from '../../../producers/http-api.js';
import { pino } from 'pino';
import { TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { freePort } from '../../../src/demo/free-port.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { FIXTURES_DIR, REPO_ROOT } from '../../support/repo-paths.js';

const FIXTURES = join(FIXTURES_DIR, 'fleets');
const TOKEN = 'catalog-test-token-0123456789';
const ROOT = REPO_ROOT;

let server: ScriptedModelServer;
let ns: FleetNamespace;
let api: Server;
let base: string;
let tasks: Queue;
const workers: WorkerHandle[] = [];

function worker(config: string, env: Record<string, string> = {}): WorkerHandle {
  const handle = startWorker(ns, {
    FLEET_CONFIG: join(FIXTURES, config),
    OPENAI_BASE_URL: server.baseURL,
    METRICS_PORT: '0',
    ...env,
  });
  workers.push(handle);
  return handle;
}

async function jobCount(): Promise<number> {
  const counts = await tasks.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'producers/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, QUEUE_PREFIX: ns.prefix, REDIS_URL, LOG_LEVEL: 'info' },
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

const refusal = async (task: unknown): Promise<string[]> => {
  try {
    await ns.client.enqueue(task);
  } catch (error) {
    if (error instanceof TaskValidationError) return error.issues.map((i) => i.path);
    throw error;
  }
  throw new Error('enqueued');
};

const BAD_TASKS: [string, unknown, string][] = [
  ['an unknown agent', { agent: 'astrologer', task: 'stars' }, 'agent'],
  ['a task for an agent this fleet lacks (default)', { task: 'hello' }, 'agent'],
  [
    'a tool the agent lacks',
    { agent: 'weather', input: { city: 'Oslo', days: 1 }, tools: ['clock'] },
    'tools.0',
  ],
  ['an input that fails the schema', { agent: 'weather', input: { city: 'Oslo', days: 9 } }, 'input.days'],
  ['a missing input', { agent: 'weather', task: 'weather please' }, 'input'],
  [
    'a budget above the ceiling',
    { agent: 'weather', input: { city: 'Oslo', days: 1 }, budget: { maxSteps: 7 } },
    'budget.maxSteps',
  ],
];

beforeAll(async () => {
  server = await startScriptedModel({ rules: [() => ({ answer: 'done' })] });
  ns = createNamespace('catalog');
  tasks = new Queue(TASKS_QUEUE, { connection: createRedis(REDIS_URL, 'producer'), prefix: ns.prefix });
  api = createServer(createApiServer({ client: ns.client, token: TOKEN, logger: pino({ level: 'silent' }) }));
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await new Promise((resolve) => api.close(resolve));
  await tasks.close();
  await ns.cleanup();
  await server.close();
});

describe('before any worker published a catalog', () => {
  it('producers check the shape only, and list no agents', async () => {
    expect(await ns.client.getCatalog()).toBeNull();
    const listed = await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await listed.json()).toEqual({ hash: null, agents: [] });
  });
});

describe('the catalog a worker publishes', () => {
  it('lists its agents with their tools, input schema and ceiling, under a content hash', async () => {
    const w = worker('weather.config.ts');
    await w.waitForOutput(/catalog published/);
    const catalog = await ns.client.getCatalog();
    expect(catalog?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(catalog?.agents).toEqual([
      expect.objectContaining({
        name: 'weather',
        tools: [
          expect.objectContaining({ name: 'get_forecast', readOnly: true }),
          expect.objectContaining({ name: 'notify_team', readOnly: false }),
        ],
        input: expect.objectContaining({ required: ['city', 'days'] }),
        output: null,
        budgetCeiling: { maxSteps: 6, maxCostUsd: 0.5 },
      }),
    ]);
    const listed = await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await listed.json()).toEqual(catalog);
    const run = await cli(['--list-agents']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(catalog);
  }, 40_000);

  it.each(BAD_TASKS)('the client refuses %s, naming %s, and enqueues nothing', async (_label, task, path) => {
    expect(await refusal(task)).toContain(path);
    expect(await jobCount()).toBe(0);
  });

  it.each(BAD_TASKS)('the HTTP API refuses %s with 400, naming %s', async (_label, task, path) => {
    const response = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(task),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { issues: { path: string }[] };
    expect(body.issues.map((i) => i.path)).toContain(path);
    expect(await jobCount()).toBe(0);
  });

  it('a batch with one bad task is refused whole, naming tasks.<n>.<field>', async () => {
    const batch = {
      tasks: [
        { agent: 'weather', input: { city: 'Oslo', days: 1 } },
        { agent: 'weather', input: { city: '', days: 1 } },
      ],
    };
    await expect(ns.client.enqueueBatch(batch)).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: 'tasks.1.input.city' })],
    });
    expect(await jobCount()).toBe(0);
  });

  it('the CLI refuses a bad input with exit 2 and the field path, enqueuing nothing', async () => {
    const run = await cli(['--agent', 'weather', '--input', '{"city":"Oslo","days":0}']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('input.days');
    expect(await jobCount()).toBe(0);
    const ok = await cli([
      '--agent',
      'weather',
      '--input',
      '{"city":"Oslo","days":2}',
      '--wait',
      '--timeout',
      '30',
    ]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'succeeded',
      answer: 'done',
    });
  }, 60_000);

  it('a worker serving another catalog says so in its log and its metrics', async () => {
    const port = await freePort(0);
    const other = worker('other.config.ts', { METRICS_PORT: String(port) });
    await other.waitForOutput(/workers serve different catalogs/);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^agentfleet_catalogs_served 2$/m);
    // Producers check against the latest one published.
    expect((await ns.client.getCatalog())?.agents.map((a) => a.name)).toEqual(['timekeeper']);
  }, 40_000);
});
