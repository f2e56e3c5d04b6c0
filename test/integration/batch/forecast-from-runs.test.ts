// The batch forecast end to end: a worker process runs a first batch against the scripted model (no history
// yet), whose runs become the history the second batch is forecast from; the second batch's budget is set from
// the forecast's p90, and both reports show the forecast against what the batch cost.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { StoreResultArchive } from '../../../producers/result-archive.js';
import { forecastDefaultsOf } from '../../../src/batch/forecast.js';
import { buildBatchReport } from '../../../src/reports/batch-summary.js';
import { renderReport } from '../../../src/reports/report-command.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
import { createStorePool } from '../../../src/store/pool.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
  FLEET_TEST_MODEL,
} from '../../support/fleet-harness.js';
import { stepsModel } from '../../support/steps-model.js';

// Completions of 64 tokens at most: each call's worst-case reservation in the spend ledger stays near what a run
// costs, so three tasks at once fit a budget of three p90s (docs/batches.md, "a tight budget").
const WORKER_ENV = {
  // Named, so the producer (parseEnv(WORKER_ENV)) forecasts the model the worker runs.
  LLM_MODEL: FLEET_TEST_MODEL,
  AGENT_PROTOCOL: 'json',
  AGENT_MAX_COST_USD: '1',
  WORKER_CONCURRENCY: '6',
  LLM_MAX_TOKENS: '64',
};

let server: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let archive: StoreResultArchive;
let client: FleetClient;

beforeAll(async () => {
  server = await startScriptedModel({ rules: [stepsModel] });
  ns = createNamespace('batchforecast');
  worker = startWorker(ns, { OPENAI_BASE_URL: server.baseURL, ...WORKER_ENV });
  await worker.waitForOutput(/worker started/);
  archive = new StoreResultArchive(ns.mysqlUrl);
  // The producer reads the same defaults as the workers.
  client = new FleetClient({
    redisUrl: REDIS_URL,
    prefix: ns.prefix,
    forecast: { history: archive, defaults: forecastDefaultsOf(parseEnv(WORKER_ENV)) },
  });
});

afterAll(async () => {
  await client?.close();
  await archive?.close();
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await server?.close();
});

/** Nearest rank: the ⌈p·n⌉-th smallest. */
const nearestRank = (sorted: number[], tenths: number) =>
  sorted[Math.ceil((tenths * sorted.length) / 10) - 1]!;

async function reportOf(batchId: string) {
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  try {
    const loaded = await new BatchReportStore(pool).loadBatch(batchId);
    return renderReport(buildBatchReport(loaded!.batch, loaded!.runs, { emails: loaded!.emails }));
  } finally {
    await pool.end();
  }
}

describe('a forecast from real runs', () => {
  it('no history before the first batch; the second is forecast from its runs, budgeted at p90, reported against actual', async () => {
    const first = Array.from({ length: 6 }, (_, i) => ({ task: `job first${i}: ${1 + (i % 3)} steps` }));
    const dry = await client.forecastBatch({ tasks: first });
    expect(dry.tasks.every((task) => task.expected === null)).toBe(true);
    expect(dry.tasks[0]).toMatchObject({ agent: 'default', model: 'gpt-4-turbo-preview' });

    const one = await client.enqueueBatch({ tasks: first });
    expect(one.forecast?.total.tasksWithoutHistory).toBe(6);
    const done = await client.waitForBatch(one.batchId, { timeoutMs: 60_000 });
    expect(done.summary).toMatchObject({ tasks: 6, succeeded: 6 });

    const firstReport = await reportOf(one.batchId);
    expect(firstReport.text).toMatch(
      /Forecast: {2}worst case \$6\.00 \/ 300,000 tokens; expected: no history for any task/,
    );
    expect(firstReport.text).toContain(`actual $${done.summary.usage.costUsd}`);

    // The history: the six runs just made, as agent_runs has them.
    const rows = await queryStore<{ cost_usd: number | string }>(
      ns,
      "SELECT cost_usd FROM agent_runs WHERE agent = 'default' AND model = 'gpt-4-turbo-preview' AND finished_at IS NOT NULL",
    );
    const costs = rows.map((row) => Number(row.cost_usd)).sort((a, b) => a - b);
    expect(costs).toHaveLength(6);
    expect(costs[0]).toBeLessThan(costs[5]!); // 1, 2 and 3 steps cost differently

    // One step each: cheaper than the p90 (a 3-step run), so the calls' worst-case reservations fit the budget
    // even when the three run at once (docs/batches.md: a budget from the forecast is a tight one).
    const second = Array.from({ length: 3 }, (_, i) => ({ task: `job second${i}: 1 steps` }));
    const forecast = await client.forecastBatch({ tasks: second });
    expect(forecast.tasks[0]!.expected).toMatchObject({
      runs: 6,
      fewRuns: false,
      p50Usd: nearestRank(costs, 5),
      p90Usd: nearestRank(costs, 9),
    });

    const two = await client.enqueueBatch({ tasks: second }, undefined, { maxCostFromForecast: 'p90' });
    const budget = Math.ceil(Number((3 * nearestRank(costs, 9) * 1e6).toFixed(4))) / 1e6;
    expect(two.forecast?.batchBudget).toEqual({ maxCostUsd: budget });
    const finished = await client.waitForBatch(two.batchId, { timeoutMs: 60_000 });
    expect(finished.summary.succeeded).toBe(3);
    expect(finished.summary.usage.costUsd).toBeLessThanOrEqual(budget);

    const [row] = await queryStore<{ max_cost_usd: number | string; forecast: unknown }>(
      ns,
      'SELECT max_cost_usd, forecast FROM agent_batches WHERE batch_id = ?',
      [two.batchId],
    );
    expect(Number(row!.max_cost_usd)).toBe(budget);
    const stored = typeof row!.forecast === 'string' ? (JSON.parse(row!.forecast) as unknown) : row!.forecast;
    expect(stored).toMatchObject({
      budgetFromForecast: { quantile: 'p90' },
      total: { tasks: 3, tasksWithHistory: 3 },
    });

    const report = await reportOf(two.batchId);
    const actual = finished.summary.usage.costUsd;
    expect(report.text).toMatch(
      /Forecast: {2}worst case .*; expected \$[\d.]+–\$[\d.]+ \(p50–p90, mean \$[\d.]+\) for all 3 tasks/,
    );
    expect(report.text).toContain(`actual $${actual}: below the p50`);
    expect(report.markdown).toContain('## Forecast against actual');
    expect(report.markdown).toMatch(
      /\| default \| gpt-4-turbo-preview \| 3 \| \$3\.00 \| .* \| 6 \| .* \(3 finished\) \|/,
    );
    expect(report.html).toContain('<h2>Forecast against actual</h2>');
    expect(report.html).toContain('the batch budget was set from its p90');

    // The report the batch aggregator stored when the batch completed shows it too.
    const [saved] = await queryStore<{ markdown: string }>(
      ns,
      'SELECT markdown FROM batch_reports WHERE batch_id = ?',
      [two.batchId],
    );
    expect(saved?.markdown).toContain('## Forecast against actual');
  });

  it("a schedule's firing is stored with its forecast, from the same history", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'forecast-schedules-'));
    const file = join(dir, 'schedules.json');
    await writeFile(
      file,
      JSON.stringify({
        schedules: [{ name: 'tick', cron: '* * * * * *', batch: { tasks: [{ task: 'job tick: 1 steps' }] } }],
      }),
    );
    const scheduler = startWorker(ns, {
      OPENAI_BASE_URL: server.baseURL,
      ...WORKER_ENV,
      SCHEDULES_FILE: file,
    });
    try {
      await scheduler.waitForOutput(/worker started/);
      let forecast: unknown = null;
      for (let i = 0; i < 60 && forecast === null; i++) {
        const [row] = await queryStore<{ forecast: unknown }>(
          ns,
          "SELECT forecast FROM agent_batches WHERE batch_id LIKE 'tick-%' AND forecast IS NOT NULL LIMIT 1",
        );
        forecast = row ? (typeof row.forecast === 'string' ? JSON.parse(row.forecast) : row.forecast) : null;
        if (forecast === null) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      // The runs of the test above are its history: 9 finished runs of the default agent on this model.
      expect(forecast).toMatchObject({
        total: { tasks: 1, tasksWithHistory: 1 },
        groups: [{ agent: 'default', model: 'gpt-4-turbo-preview', history: { runs: expect.any(Number) } }],
      });
    } finally {
      await killWorker(scheduler);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
