// The forecast stored with a batch (agent_batches.forecast) against what the batch cost: in total and per agent
// and model, from the finished runs of its tasks. Pure; the renderers show it (forecast-section.ts).
import { z } from 'zod';
import type { ForecastGroup, StoredForecast } from '../batch/forecast.js';
import { sumCostUsd } from '../batch/batch-summary.js';
import type { BatchRunInput } from './batch-run-input.js';
import { actualAgainstForecast } from './forecast-text.js';

export interface ForecastGroupReport {
  group: ForecastGroup;
  /** Finished runs of the batch's tasks on this agent and model, and what they cost. */
  finished: number;
  actualUsd: number;
}

export interface ForecastReport {
  forecast: StoredForecast;
  actualUsd: number;
  /** Where the actual cost fell: below the p50, within p50–p90, above the p90… */
  verdict: string;
  groups: ForecastGroupReport[];
}

const money = z.number().finite().nonnegative();
const expected = z.object({ p50Usd: money, p90Usd: money, meanUsd: money });
const worst = z.object({ costUsd: money, tokens: z.number().int().nonnegative() });
// What the report reads, checked; other fields pass through (a later version may add some).
const storedSchema = z.looseObject({
  madeAt: z.string(),
  historySince: z.string(),
  method: z.string(),
  budgetsFrom: z.enum(['catalog', 'defaults']),
  batchBudget: z.looseObject({ maxCostUsd: money.optional(), maxTokens: z.number().optional() }).nullable(),
  budgetFromForecast: z
    .object({ quantile: z.enum(['p50', 'p90']), ifNoHistory: z.enum(['refuse', 'worst-case']) })
    .nullable(),
  groups: z.array(
    z.object({
      agent: z.string(),
      model: z.string(),
      tasks: z.number().int(),
      worstCase: worst,
      history: expected.extend({ runs: z.number().int().positive(), fewRuns: z.boolean() }).nullable(),
      expected: expected.nullable(),
    }),
  ),
  total: z.object({
    tasks: z.number().int(),
    worstCase: worst.extend({ cappedByBatchBudget: z.boolean() }),
    expected: expected.nullable(),
    tasksWithHistory: z.number().int(),
    tasksWithoutHistory: z.number().int(),
  }),
});

/** Null when the batch was enqueued without a forecast; a forecast that cannot be read adds a warning. */
export function forecastAgainstActual(
  stored: unknown,
  runs: readonly BatchRunInput[],
  actualUsd: number,
  warnings: string[],
): ForecastReport | null {
  if (stored === null || stored === undefined) return null;
  const parsed = storedSchema.safeParse(stored);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    warnings.push(
      `the forecast stored with the batch cannot be read (${issue?.path.join('.') || 'shape'}: ${issue?.message ?? ''}); it is not shown`,
    );
    return null;
  }
  const forecast = parsed.data as StoredForecast;
  const finished = runs.filter((run) => run.status !== 'running');
  const groups = forecast.groups.map((group): ForecastGroupReport => {
    const mine = finished.filter(
      (run) => (run.agent ?? null) === group.agent && (run.model ?? null) === group.model,
    );
    return { group, finished: mine.length, actualUsd: sumCostUsd(mine.map((run) => run.costUsd)) };
  });
  return { forecast, actualUsd, verdict: actualAgainstForecast(forecast, actualUsd), groups };
}
