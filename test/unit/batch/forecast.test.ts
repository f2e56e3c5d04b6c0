// The batch forecast's pure parts: building it from a plan (worst cases, quantile caps, totals), the budget taken
// from it, the CLI flags, and the report's reading of a stored forecast. The history and the catalog against the
// real services are in test/integration/batch/forecast.test.ts.
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../../../producers/cli-args.js';
import {
  buildForecast,
  ForecastError,
  maxCostFromForecast,
  storedForecast,
  type ForecastPlan,
} from '../../../src/batch/forecast.js';
import { buildBatchReport, type BatchRecord } from '../../../src/reports/batch-summary.js';
import { renderReport } from '../../../src/reports/report-command.js';

const budget = { maxSteps: 8, maxTokens: 50_000, maxCostUsd: 0.05, deadlineMs: 300_000 };
const mini = { inputPerMillion: 0.15, outputPerMillion: 0.6 };

function plan(
  histories: [string, { runs: number; p50Usd: number; p90Usd: number; meanUsd: number }][],
): ForecastPlan {
  return {
    madeAt: new Date('2026-12-01T00:00:00Z'),
    since: new Date('2026-11-01T00:00:00Z'),
    budgetsFrom: 'catalog',
    tasks: [
      { agent: 'default', model: 'gpt-4o-mini', budget, price: mini },
      { agent: 'default', model: 'gpt-4o-mini', budget: { ...budget, maxCostUsd: 0.004 }, price: mini },
      { agent: 'default', model: 'unknown', budget, price: null },
    ],
    histories: new Map(histories.map(([key, h]) => [key, h])),
  };
}

const MINI = JSON.stringify(['default', 'gpt-4o-mini']);

describe('buildForecast', () => {
  it('caps each quantile at its task worst case and sums the totals over the tasks with history', () => {
    const forecast = buildForecast(
      plan([[MINI, { runs: 4, p50Usd: 0.003, p90Usd: 0.006, meanUsd: 0.0035 }]]),
      null,
    );
    expect(forecast.tasks.map((t) => t.worstCase.costUsd)).toEqual([0.03, 0.004, 0.05]);
    expect(forecast.tasks[0]!.expected).toEqual({
      runs: 4,
      fewRuns: true,
      p50Usd: 0.003,
      p90Usd: 0.006,
      meanUsd: 0.0035,
    });
    expect(forecast.tasks[1]!.expected).toMatchObject({ p50Usd: 0.003, p90Usd: 0.004 });
    expect(forecast.tasks[2]!.expected).toBeNull();
    expect(forecast.total).toMatchObject({
      worstCase: { costUsd: 0.084, tokens: 150_000, cappedByBatchBudget: false },
      expected: { p50Usd: 0.006, p90Usd: 0.01, meanUsd: 0.007 },
      tasksWithHistory: 2,
      tasksWithoutHistory: 1,
    });
    expect(forecast.groups.map((g) => [g.model, g.tasks, g.expected?.p90Usd ?? null])).toEqual([
      ['gpt-4o-mini', 2, 0.01],
      ['unknown', 1, null],
    ]);
    expect(storedForecast(forecast)).not.toHaveProperty('tasks');
  });

  it('the batch budget caps the total worst case and the expected totals with it', () => {
    const forecast = buildForecast(plan([[MINI, { runs: 9, p50Usd: 0.02, p90Usd: 0.03, meanUsd: 0.02 }]]), {
      maxCostUsd: 0.025,
    });
    expect(forecast.total.worstCase).toMatchObject({ costUsd: 0.025, cappedByBatchBudget: true });
    expect(forecast.total.expected).toMatchObject({ p50Usd: 0.024, p90Usd: 0.025 });
  });
});

describe('maxCostFromForecast', () => {
  const forecast = buildForecast(
    plan([[MINI, { runs: 9, p50Usd: 0.0011111, p90Usd: 0.0022222, meanUsd: 0.002 }]]),
    null,
  );

  it('refuses a task without history by default, naming it; counts it at its worst case when asked', () => {
    expect(() => maxCostFromForecast(forecast, 'p90')).toThrow(ForecastError);
    expect(() => maxCostFromForecast(forecast, 'p90')).toThrow(/default on unknown .*tasks 3\)/);
    // 0.0022222 + 0.0022222 + 0.05, rounded up to a micro-dollar.
    expect(maxCostFromForecast(forecast, 'p90', 'worst-case')).toBe(0.054445);
    expect(maxCostFromForecast(forecast, 'p50', 'worst-case')).toBe(0.052223);
  });

  it('refuses a budget of $0', () => {
    const free = buildForecast(plan([[MINI, { runs: 9, p50Usd: 0, p90Usd: 0, meanUsd: 0 }]]), null);
    const known = { ...free, tasks: free.tasks.slice(0, 2) };
    expect(() => maxCostFromForecast(known, 'p90')).toThrow(/it is \$0/);
  });
});

describe('CLI flags', () => {
  it('reads --forecast, --max-cost-from-forecast and --if-no-history', () => {
    expect(parseCliArgs(['--batch', 'b.jsonl', '--forecast'])).toMatchObject({
      mode: 'batch',
      forecast: true,
    });
    expect(
      parseCliArgs([
        '--batch',
        'b.jsonl',
        '--max-cost-from-forecast',
        'p50',
        '--if-no-history',
        'worst-case',
      ]),
    ).toMatchObject({ forecast: false, maxCostFromForecast: 'p50', ifNoHistory: 'worst-case' });
  });

  it('refuses them where they mean nothing, naming the flag', () => {
    expect(() => parseCliArgs(['--task', 't', '--forecast'])).toThrow(/--forecast needs --batch/);
    expect(() => parseCliArgs(['--batch', 'b', '--if-no-history', 'worst-case'])).toThrow(
      /--if-no-history needs --max-cost-from-forecast/,
    );
    expect(() =>
      parseCliArgs(['--batch', 'b', '--max-cost-from-forecast', 'p90', '--if-no-history', 'guess']),
    ).toThrow(/--if-no-history must be refuse or worst-case, got "guess"/);
  });
});

describe('the report', () => {
  const batch: BatchRecord = {
    batchId: 'b',
    name: null,
    tasks: 1,
    jobIds: ['b-1'],
    maxCostUsd: null,
    maxTokens: null,
    state: 'completed',
    summary: null,
    createdAt: new Date('2026-12-01T00:00:00Z'),
    completedAt: new Date('2026-12-01T00:10:00Z'),
  };
  const run = {
    jobId: 'b-1',
    task: 't',
    status: 'succeeded' as const,
    stopReason: 'answer' as const,
    answer: 'a',
    steps: 1,
    toolCalls: 0,
    promptTokens: 10,
    completionTokens: 1,
    totalTokens: 11,
    costUsd: 0.0025,
    agent: 'default',
    model: 'gpt-4o-mini',
  };

  it('shows the forecast against actual, with the actual per agent and model', () => {
    const forecast = buildForecast(
      {
        ...plan([[MINI, { runs: 12, p50Usd: 0.002, p90Usd: 0.003, meanUsd: 0.0022 }]]),
        tasks: plan([]).tasks.slice(0, 1),
      },
      null,
    );
    const report = buildBatchReport({ ...batch, forecast: storedForecast(forecast) }, [run]);
    expect(report.forecast?.groups[0]).toMatchObject({ finished: 1, actualUsd: 0.0025 });
    const rendered = renderReport(report);
    expect(rendered.text).toContain('actual $0.0025: within p50–p90');
    expect(rendered.markdown).toContain(
      '| default | gpt-4o-mini | 1 | $0.03 | $0.002–$0.003 | 12 | $0.0025 (1 finished) |',
    );
    expect(rendered.html).toContain('<h2>Forecast against actual</h2>');
  });

  it('no forecast: no section; one that cannot be read: a warning', () => {
    const none = renderReport(buildBatchReport(batch, [run]));
    expect(none.markdown).not.toContain('Forecast against actual');
    const odd = buildBatchReport({ ...batch, forecast: { total: 'lots' } }, [run]);
    expect(odd.forecast).toBeNull();
    expect(odd.warnings.join(' ')).toMatch(/the forecast stored with the batch cannot be read/);
  });
});
