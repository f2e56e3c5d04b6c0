// A batch forecast in words: the CLI's dry run prints it per task and in total, and the batch report puts the
// stored forecast next to what the batch actually cost. Plain text; the renderers escape it as they need.
import type {
  BatchForecast,
  ExpectedCost,
  ForecastGroup,
  StoredForecast,
  WorstCase,
} from '../batch/forecast.js';
import { formatInt, formatUsd } from './text.js';

export function worstCaseText(worst: WorstCase): string {
  return `${formatUsd(worst.costUsd)} / ${formatInt(worst.tokens)} tokens`;
}

/** `$0.0012–$0.0020 (p50–p90 of 12 runs)`, `… (3 runs: few)`, or `no history`. */
export function expectedText(expected: ExpectedCost | null): string {
  if (!expected) return 'no history';
  return `${formatUsd(expected.p50Usd)}–${formatUsd(expected.p90Usd)} (${runsText(expected)})`;
}

/** One line per agent and model of a stored forecast. */
export function groupText(group: ForecastGroup): string {
  const tasks = `${group.tasks} task${group.tasks === 1 ? '' : 's'}`;
  const expected =
    group.expected && group.history
      ? `expected ${formatUsd(group.expected.p50Usd)}–${formatUsd(group.expected.p90Usd)} (${runsText(group.history)})`
      : 'no history';
  return `${group.agent} on ${group.model}: ${tasks}, worst case ${worstCaseText(group.worstCase)}, ${expected}`;
}

function runsText(expected: ExpectedCost): string {
  const runs = `${expected.runs} run${expected.runs === 1 ? '' : 's'}`;
  return `p50–p90 of ${runs}${expected.fewRuns ? ', few: under 5' : ''}`;
}

/** The total line: worst case and the expected range, saying which tasks it covers. */
export function totalText(forecast: StoredForecast): string {
  const { total } = forecast;
  const worst = `worst case ${worstCaseText(total.worstCase)}${total.worstCase.cappedByBatchBudget ? ' (capped by the batch budget)' : ''}`;
  if (!total.expected) return `${worst}; expected: no history for any task`;
  const share =
    total.tasksWithoutHistory === 0
      ? `all ${total.tasks} tasks`
      : `${total.tasksWithHistory} of ${total.tasks} tasks (${total.tasksWithoutHistory} without history)`;
  return `${worst}; expected ${formatUsd(total.expected.p50Usd)}–${formatUsd(total.expected.p90Usd)} (p50–p90, mean ${formatUsd(total.expected.meanUsd)}) for ${share}`;
}

/** The dry run's lines: a header, one line per task, the groups and the total. */
export function forecastLines(forecast: BatchForecast): string[] {
  const lines = [
    `forecast of ${forecast.total.tasks} task${forecast.total.tasks === 1 ? '' : 's'}, nothing enqueued (${forecast.method}; runs finished since ${forecast.historySince}; budgets from ${forecast.budgetsFrom === 'catalog' ? "the workers' catalog" : 'the defaults: no catalog published'})`,
  ];
  for (const task of forecast.tasks) {
    lines.push(
      `  task ${task.index} (${task.agent} on ${task.model}): worst case ${worstCaseText(task.worstCase)}, expected ${expectedText(task.expected)}`,
    );
  }
  for (const group of forecast.groups) lines.push(`  ${groupText(group)}`);
  if (forecast.budgetFromForecast && forecast.batchBudget?.maxCostUsd !== undefined) {
    lines.push(
      `  batch budget from the forecast's ${forecast.budgetFromForecast.quantile}: ${formatUsd(forecast.batchBudget.maxCostUsd)}`,
    );
  }
  lines.push(`total: ${totalText(forecast)}`);
  return lines;
}

/** Where the actual cost fell against the forecast's range. */
export function actualAgainstForecast(forecast: StoredForecast, actualUsd: number): string {
  const expected = forecast.total.expected;
  if (!expected) return `actual ${formatUsd(actualUsd)}; no expected range (no history)`;
  const where =
    actualUsd < expected.p50Usd
      ? 'below the p50'
      : actualUsd <= expected.p90Usd
        ? 'within p50–p90'
        : actualUsd <= forecast.total.worstCase.costUsd
          ? 'above the p90, within the worst case'
          : 'above the worst case';
  const partial =
    forecast.total.tasksWithoutHistory > 0 ? ' (the range covers only the tasks with history)' : '';
  return `actual ${formatUsd(actualUsd)}: ${where}${partial}`;
}
