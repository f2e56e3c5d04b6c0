// The batch forecast (docs/batches.md) against the real Redis and MariaDB, with no worker: history rows written
// through the RunsRepository (a known set of costs), a catalog published as a worker publishes it, the client,
// the HTTP API's ?dryRun=true and the CLI's --forecast and --max-cost-from-forecast.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseEnv } from '../../../config/env.js';
import { DEFAULT_MODEL } from '../../../src/kernel/defaults.js';
import { FleetClient, ForecastError } from '../../../src/client/fleet-client.js';
import { createApiServer } from '../../../producers/http-api.js';
import { StoreResultArchive } from '../../../producers/result-archive.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import type { BatchJobData } from '../../../src/batch/batch-schema.js';
import { forecastDefaultsOf, type BatchForecast } from '../../../src/batch/forecast.js';
import { buildCatalog } from '../../../src/catalog/catalog.js';
import { CatalogStore } from '../../../src/catalog/catalog-store.js';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { BATCHES_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

const ROOT = REPO_ROOT;
const TOKEN = 'forecast-test-token';
const DAY = 86_400_000;

let ns: FleetNamespace;
let pool: Pool;
let redis: Redis;
let archive: StoreResultArchive;
let client: FleetClient;
let tasksQueue: Queue;
let batchesQueue: Queue;
let server: Server;
let base: string;
let dir: string;

/** The costs of the known set: 10 runs of the default agent on gpt-4o-mini, $0.001 … $0.010. */
const DEFAULT_COSTS = [0.004, 0.001, 0.01, 0.007, 0.002, 0.009, 0.003, 0.006, 0.005, 0.008];

let runNumber = 0;
async function recordRun(agent: string, model: string, costUsd: number, finishedAt: Date | null) {
  const repository = new RunsRepository(pool);
  const jobId = `history-${++runNumber}`;
  await repository.startRun({ jobId, task: 'history', model, protocol: 'tools', agent, attempt: 1 });
  if (finishedAt === null) return;
  const result: AgentResult = {
    jobId,
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'done',
    steps: 1,
    toolCalls: 0,
    usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd },
    error: null,
  };
  await repository.finishRun(result, finishedAt);
}

async function queueCounts(): Promise<Record<string, number>> {
  const [tasks, batches] = await Promise.all([tasksQueue.getJobCounts(), batchesQueue.getJobCounts()]);
  return { ...tasks, ...Object.fromEntries(Object.entries(batches).map(([k, v]) => [`batch-${k}`, v])) };
}

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'producers/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, QUEUE_PREFIX: ns.prefix, REDIS_URL, MYSQL_URL: ns.mysqlUrl, LOG_LEVEL: 'info' },
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

async function batchFile(name: string, tasks: object[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, tasks.map((task) => JSON.stringify(task)).join('\n'));
  return file;
}

beforeAll(async () => {
  ns = createNamespace('forecast');
  pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 2 });
  await migrate(pool);
  const now = Date.now();
  for (const cost of DEFAULT_COSTS) await recordRun('default', 'gpt-4o-mini', cost, new Date(now - DAY));
  // Not counted: older than 30 days, unfinished, another model, another agent.
  await recordRun('default', 'gpt-4o-mini', 5, new Date(now - 31 * DAY));
  await recordRun('default', 'gpt-4o-mini', 5, null);
  await recordRun('default', 'gpt-4.1', 5, new Date(now - DAY));
  // Three runs of the digest agent: few.
  for (const cost of [0.02, 0.01, 0.04])
    await recordRun('digest', 'gpt-4.1-mini', cost, new Date(now - 2 * DAY));

  // The catalog a worker of this fleet would publish: digest has a budget above its ceiling, and a model.
  redis = createRedis(REDIS_URL, 'producer');
  const agents = [
    defineAgent({ name: 'default', description: 'the built-in agent', tools: [] }),
    defineAgent({
      name: 'digest',
      description: 'a digest',
      tools: [],
      model: 'gpt-4.1-mini',
      budget: { maxCostUsd: 0.2 },
      budgetCeiling: { maxCostUsd: 0.03, maxTokens: 20_000 },
      input: z.object({ team: z.string() }),
    }),
  ];
  await new CatalogStore(redis, ns.prefix).publish(buildCatalog(agents, []));

  archive = new StoreResultArchive(ns.mysqlUrl);
  client = new FleetClient({
    redisUrl: REDIS_URL,
    prefix: ns.prefix,
    forecast: { history: archive, defaults: forecastDefaultsOf(parseEnv({})) },
  });
  tasksQueue = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  batchesQueue = new Queue(BATCHES_QUEUE, { connection: redis, prefix: ns.prefix });
  const logger = pino({ level: 'silent' });
  server = createServer(createApiServer({ client, token: TOKEN, logger }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'forecast-'));
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await client?.close();
  await archive?.close();
  await tasksQueue?.close();
  await batchesQueue?.close();
  redis?.disconnect();
  await pool?.end();
  await ns?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the forecast', () => {
  it('with history: nearest-rank p50 and p90 of per-run cost, the mean and the run count of the window', async () => {
    const forecast = await client.forecastBatch({
      tasks: [
        { task: 'a', model: 'gpt-4o-mini' },
        { task: 'b', model: 'gpt-4o-mini' },
      ],
    });
    const [first] = forecast.tasks;
    // 10 runs: p50 is the 5th smallest, p90 the 9th.
    expect(first!.expected).toEqual({
      runs: 10,
      fewRuns: false,
      p50Usd: 0.005,
      p90Usd: 0.009,
      meanUsd: 0.0055,
    });
    expect(forecast.total.expected).toEqual({ p50Usd: 0.01, p90Usd: 0.018, meanUsd: 0.011 });
    expect(forecast.total.tasksWithoutHistory).toBe(0);
    expect(forecast.groups).toEqual([
      expect.objectContaining({ agent: 'default', model: 'gpt-4o-mini', tasks: 2 }),
    ]);
    expect(forecast.budgetsFrom).toBe('catalog');
    expect(new Date(forecast.historySince).getTime()).toBeCloseTo(Date.now() - 30 * DAY, -5);
  });

  it('few runs are flagged; a model without history says so and is left out of the expected total', async () => {
    const forecast = await client.forecastBatch({
      tasks: [
        { agent: 'digest', input: { team: 'x' } },
        { task: 'new model', model: 'gpt-4o' },
      ],
    });
    const [digest, fresh] = forecast.tasks;
    expect(digest).toMatchObject({ agent: 'digest', model: 'gpt-4.1-mini' });
    // 3 runs ($0.01, $0.02, $0.04): p50 rank ⌈1.5⌉ = 2, p90 rank ⌈2.7⌉ = 3.
    expect(digest!.expected).toMatchObject({ runs: 3, fewRuns: true, p50Usd: 0.02, p90Usd: 0.03 });
    // The p90 of $0.04 is above the task's worst case ($0.03, the ceiling): capped there.
    expect(digest!.worstCase.costUsd).toBe(0.03);
    expect(fresh!.expected).toBeNull();
    expect(forecast.total).toMatchObject({ tasksWithHistory: 1, tasksWithoutHistory: 1 });
    expect(forecast.total.expected).toMatchObject({ p50Usd: 0.02, p90Usd: 0.03 });
  });

  it('worst case: task budgets after defaults and agent ceilings, at the dearest token price; the batch budget caps the total', async () => {
    const input = {
      tasks: [
        // The default agent: the contract defaults ($0.05, 50,000 tokens); at gpt-4o-mini's $0.60/M output price
        // 50,000 tokens cost $0.03, below $0.05.
        { task: 'defaults', model: 'gpt-4o-mini' },
        // Its own budget: $0.01 and 100,000 tokens ($0.06 at gpt-4o-mini's prices): $0.01.
        { task: 'own', model: 'gpt-4o-mini', budget: { maxCostUsd: 0.01, maxTokens: 100_000 } },
        // digest: its budget ($0.20) is cut to its ceiling ($0.03), tokens to 20,000 ($0.032 at $1.60/M).
        { agent: 'digest', input: { team: 'y' } },
      ],
    };
    const forecast = await client.forecastBatch(input);
    expect(forecast.tasks.map((t) => t.worstCase)).toEqual([
      { costUsd: 0.03, tokens: 50_000 },
      { costUsd: 0.01, tokens: 100_000 },
      { costUsd: 0.03, tokens: 20_000 },
    ]);
    expect(forecast.total.worstCase).toEqual({ costUsd: 0.07, tokens: 170_000, cappedByBatchBudget: false });

    const capped = await client.forecastBatch({ ...input, budget: { maxCostUsd: 0.05, maxTokens: 60_000 } });
    expect(capped.total.worstCase).toEqual({ costUsd: 0.05, tokens: 60_000, cappedByBatchBudget: true });
    // The expected total ($0.005 + $0.005 + $0.02) fits under the cap; its p90 sum ($0.009+$0.009+$0.03) too.
    expect(capped.total.expected).toMatchObject({ p50Usd: 0.03, p90Usd: 0.048 });

    // A task asking above its agent's ceiling is refused, as a worker would refuse it.
    await expect(
      client.forecastBatch({
        tasks: [{ agent: 'digest', input: { team: 'z' }, budget: { maxCostUsd: 0.5 } }],
      }),
    ).rejects.toThrow(/tasks\.0\.budget\.maxCostUsd: must be at most 0\.03/);
  });

  it('without a catalog the defaults resolve the budget, and the forecast says so', async () => {
    const bare = new FleetClient({
      redisUrl: REDIS_URL,
      prefix: `${ns.prefix}-nocatalog`,
      forecast: { history: archive, defaults: forecastDefaultsOf(parseEnv({ AGENT_MAX_COST_USD: '0.02' })) },
    });
    try {
      const forecast = await bare.forecastBatch({ tasks: [{ task: 'x' }] });
      expect(forecast.budgetsFrom).toBe('defaults');
      // LLM_MODEL's default has no history here.
      expect(forecast.tasks[0]).toMatchObject({
        model: DEFAULT_MODEL,
        worstCase: { costUsd: 0.02, tokens: 50_000 },
        expected: null,
      });
    } finally {
      await bare.close();
    }
  });

  it('a store that does not answer: the batch is enqueued without a forecast, in bounded time; a dry run fails', async () => {
    const slow = new FleetClient({
      redisUrl: REDIS_URL,
      prefix: ns.prefix,
      forecast: { history: archive, defaults: forecastDefaultsOf(parseEnv({})), timeoutMs: 500 },
    });
    // A real hang: another session holds agent_runs locked, so the history query waits on it.
    const locker = await pool.getConnection();
    try {
      await locker.query('LOCK TABLES agent_runs WRITE');
      const started = Date.now();
      const batch = await slow.enqueueBatch({ tasks: [{ task: 'while locked', model: 'gpt-4o-mini' }] });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(batch.forecast).toBeNull();
      expect(batch.forecastError).toMatch(/did not answer within 500 ms/);
      expect(((await batchesQueue.getJob(batch.batchId))!.data as BatchJobData).forecast).toBeUndefined();
      await expect(slow.forecastBatch({ tasks: [{ task: 'x' }] })).rejects.toThrow(/did not answer/);
    } finally {
      await locker.query('UNLOCK TABLES');
      locker.release();
      await slow.close();
    }
  });

  it('the batch enqueued for real carries its forecast without the per-task lines', async () => {
    const { batchId, forecast } = await client.enqueueBatch({
      tasks: [{ task: 'stored', model: 'gpt-4o-mini' }],
    });
    const parent = await batchesQueue.getJob(batchId);
    const data = parent!.data as BatchJobData;
    expect(data.forecast).toMatchObject({ total: { expected: { p50Usd: 0.005, p90Usd: 0.009 } } });
    expect(data.forecast).not.toHaveProperty('tasks');
    expect(forecast?.tasks).toHaveLength(1);
  });
});

describe('POST /v1/batches?dryRun=true', () => {
  const post = (query: string, body: object) =>
    fetch(`${base}/v1/batches${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('answers the forecast and enqueues nothing', async () => {
    const before = await queueCounts();
    const response = await post('?dryRun=true', {
      tasks: [
        { task: 'a', model: 'gpt-4o-mini' },
        { task: 'b', model: 'gpt-4o' },
      ],
      budget: { maxCostUsd: 1 },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { dryRun: boolean; forecast: BatchForecast };
    expect(body.dryRun).toBe(true);
    expect(body.forecast.tasks[0]!.expected).toMatchObject({ runs: 10, p50Usd: 0.005, p90Usd: 0.009 });
    expect(body.forecast.tasks[1]!.expected).toBeNull();
    expect(body.forecast.batchBudget).toEqual({ maxCostUsd: 1 });
    expect(await queueCounts()).toEqual(before);
  });

  it('a bad batch is refused with the field path, a bad dryRun value names the parameter', async () => {
    const before = await queueCounts();
    const bad = await post('?dryRun=true', { tasks: [{ task: '' }] });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_batch', issues: [{ path: 'tasks.0.task' }] });
    const odd = await post('?dryRun=maybe', { tasks: [{ task: 'a' }] });
    expect(odd.status).toBe(400);
    expect(await odd.json()).toMatchObject({ error: 'invalid_query', issues: [{ path: 'dryRun' }] });
    expect(await queueCounts()).toEqual(before);
  });

  it('dryRun=false enqueues as without it', async () => {
    const response = await post('?dryRun=false', { tasks: [{ task: 'real' }] });
    expect(response.status).toBe(202);
    expect(await response.json()).toHaveProperty('batchId');
  });
});

describe('the CLI', () => {
  it('--forecast prints each task and the total, enqueues nothing', async () => {
    const file = await batchFile('forecast.jsonl', [
      { task: 'a', model: 'gpt-4o-mini' },
      { task: 'b', model: 'gpt-4o' },
    ]);
    const before = await queueCounts();
    const run = await cli(['--batch', file, '--forecast']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /task 1 \(default on gpt-4o-mini\): worst case \$0\.03 \/ 50,000 tokens, expected \$0\.005–\$0\.009 \(p50–p90 of 10 runs\)/,
    );
    expect(run.stderr).toMatch(
      /task 2 \(default on gpt-4o\): worst case \$0\.05 \/ 50,000 tokens, expected no history/,
    );
    expect(run.stderr).toMatch(
      /total: worst case \$0\.08 \/ 100,000 tokens; expected \$0\.005–\$0\.009 .* for 1 of 2 tasks \(1 without history\)/,
    );
    const printed = JSON.parse(run.stdout.trim()) as { forecast: BatchForecast };
    expect(printed.forecast.total.tasks).toBe(2);
    expect(await queueCounts()).toEqual(before);
  });

  it("--max-cost-from-forecast p90 sets the batch budget to the sum of the tasks' p90s", async () => {
    const file = await batchFile('p90.jsonl', [
      { task: 'a', model: 'gpt-4o-mini' },
      { task: 'b', model: 'gpt-4o-mini' },
      { agent: 'digest', input: { team: 'q' } },
    ]);
    const run = await cli(['--batch', file, '--max-cost-from-forecast', 'p90']);
    expect(run.code, run.stderr).toBe(0);
    const { batchId } = JSON.parse(run.stdout.trim()) as { batchId: string };
    // $0.009 + $0.009 + $0.03 (digest's p90 $0.04 capped at its worst case).
    expect(run.stderr).toMatch(/batch budget set from the forecast's p90: \$0\.048/);
    const data = (await batchesQueue.getJob(batchId))!.data as BatchJobData;
    expect(data.budget).toEqual({ maxCostUsd: 0.048 });
    expect(data.forecast?.budgetFromForecast).toEqual({ quantile: 'p90', ifNoHistory: 'refuse' });
    // The cap is in the spend ledger before any task can run.
    const spend = await new SpendLedger({ redis, prefix: ns.prefix }).getSpend(batchScope(batchId));
    expect(spend.capMicroUsd).toBe(48_000);
  });

  it('--max-cost-from-forecast p50 with a task without history is refused, naming it; worst-case counts it', async () => {
    const file = await batchFile('nohistory.jsonl', [
      { task: 'a', model: 'gpt-4o-mini' },
      { task: 'b', model: 'gpt-4o' },
    ]);
    const before = await queueCounts();
    const refused = await cli(['--batch', file, '--max-cost-from-forecast', 'p50']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /1 task\(s\) have no history \(no finished run of default on gpt-4o in the last 30 days; tasks 2\)/,
    );
    expect(refused.stderr).toMatch(/--if-no-history worst-case/);
    expect(await queueCounts()).toEqual(before);

    const counted = await cli([
      '--batch',
      file,
      '--max-cost-from-forecast',
      'p50',
      '--if-no-history',
      'worst-case',
    ]);
    expect(counted.code, counted.stderr).toBe(0);
    const { batchId } = JSON.parse(counted.stdout.trim()) as { batchId: string };
    // $0.005 (p50) + $0.05 (the gpt-4o task's worst case: the default $0.05).
    expect(((await batchesQueue.getJob(batchId))!.data as BatchJobData).budget).toEqual({
      maxCostUsd: 0.055,
    });
  });

  it('bad flag combinations name the flags', async () => {
    const file = await batchFile('flags.jsonl', [{ task: 'a' }]);
    const both = await cli(['--batch', file, '--max-cost-from-forecast', 'p90', '--batch-max-cost', '1']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--max-cost-from-forecast and --batch-max-cost both set the batch budget/);
    const quantile = await cli(['--batch', file, '--max-cost-from-forecast', 'p99']);
    expect(quantile.stderr).toMatch(/--max-cost-from-forecast must be p50 or p90, got "p99"/);
    const wait = await cli(['--batch', file, '--forecast', '--wait']);
    expect(wait.stderr).toMatch(/--wait cannot go with --forecast/);
  });

  it('the library refuses a dollar budget given twice', async () => {
    await expect(
      client.enqueueBatch({ tasks: [{ task: 'a' }], budget: { maxCostUsd: 1 } }, undefined, {
        maxCostFromForecast: 'p90',
      }),
    ).rejects.toBeInstanceOf(ForecastError);
  });
});
