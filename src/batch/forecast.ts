// A batch's forecast, made before it runs (docs/batches.md): per task and in total, the worst case its budgets
// allow and the cost to expect from the recorded runs of the same agent and model.
//
// - Worst case: each task's budget after defaults (src/queue/task-budget.ts, as a worker resolves it): its
//   maxTokens, and its maxCostUsd or, when lower, maxTokens at the model's dearest token price; the batch's
//   budget caps the total.
// - Expected: nearest-rank p50 and p90 (and the mean) of per-run cost over the finished runs of the task's agent
//   and model in the last 30 days, each capped at the task's worst case (no run can end above its budget).
//   Fewer than 5 runs: flagged `fewRuns`. No run: no expected cost for that task ("no history").
// - Totals of expected costs are sums over the tasks that have history (a sum of p90s, not the p90 of the sum:
//   an upper-side estimate when runs vary independently), capped at the total worst case.
import { DEFAULT_AGENT } from '../kernel/define-agent.js';
import type { Env } from '../../config/env.js';
import type { Budget } from '../kernel/budget.js';
import { InputError } from '../kernel/errors.js';
import type { Catalog } from '../catalog/catalog.js';
import { type ModelPrice } from '../kernel/pricing.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import {
  fleetBudgetDefaults,
  resolveTaskBudget,
  resolveTaskModel,
  type BudgetSource,
} from '../queue/task-budget.js';
import type { AgentTask } from '../queue/task-schema.js';
import { NO_HISTORY, type CostHistory } from './cost-history.js';
import { withTimeout } from '../util/with-timeout.js';
import type { BatchBudget } from './batch-budget.js';

export const HISTORY_DAYS = 30;
/** Below this many runs a quantile is mostly one run's cost: the forecast says so. */
export const FEW_RUNS = 5;
export const FORECAST_METHOD =
  'nearest-rank quantiles of per-run cost_usd over finished runs of the same agent and model, last 30 days';

export type ForecastQuantile = 'p50' | 'p90';
/** What `maxCostFromForecast` does when some task has no history. */
export type IfNoHistory = 'refuse' | 'worst-case';

/** Where run history comes from (src/store/run-history.ts over the store). */
export interface CostHistorySource {
  costHistory(agent: string, model: string, since: Date): Promise<CostHistory>;
}

/** What a producer needs to forecast: the history and the fleet's defaults (the workers' AGENT_MAX_*, LLM_MODEL). */
export interface ForecastSettings {
  history: CostHistorySource;
  defaults: { budget: Budget; model: string; prices?: Readonly<Record<string, ModelPrice>> | undefined };
  /** The history reads of one forecast must answer within this (ms); default HISTORY_TIMEOUT_MS. */
  timeoutMs?: number;
}

/** A store that does not answer (a lock, a hung server) must not hold a batch's enqueue for long. */
export const HISTORY_TIMEOUT_MS = 5_000;

export interface ExpectedCost {
  /** Runs the figures are based on. */
  runs: number;
  fewRuns: boolean;
  p50Usd: number;
  p90Usd: number;
  meanUsd: number;
}

export interface WorstCase {
  costUsd: number;
  tokens: number;
}

export interface TaskForecast {
  /** 1-based position in the batch (the line of a batch file). */
  index: number;
  agent: string;
  model: string;
  worstCase: WorstCase;
  /** Null: no history for its agent and model. */
  expected: ExpectedCost | null;
}

/** The tasks of one agent and model, summed. */
export interface ForecastGroup {
  agent: string;
  model: string;
  tasks: number;
  worstCase: WorstCase;
  /** Per-task figures of the history (before capping); null without history. */
  history: ExpectedCost | null;
  /** Sums over the group's tasks, each capped at its worst case; null without history. */
  expected: { p50Usd: number; p90Usd: number; meanUsd: number } | null;
}

export interface ForecastTotal {
  tasks: number;
  /** Sums of the tasks' worst cases, capped by the batch budget (`cappedByBatchBudget` says when it bit). */
  worstCase: WorstCase & { cappedByBatchBudget: boolean };
  /** Over the tasks with history only; null when none has any. */
  expected: { p50Usd: number; p90Usd: number; meanUsd: number } | null;
  tasksWithHistory: number;
  tasksWithoutHistory: number;
}

/** The forecast stored with a batch (agent_batches.forecast): everything but the per-task lines. */
export interface StoredForecast {
  madeAt: string;
  /** Runs finished at or after this were counted. */
  historySince: string;
  method: string;
  /** Where the agents' budgets came from: the catalog the workers publish, or the defaults alone. */
  budgetsFrom: 'catalog' | 'defaults';
  batchBudget: BatchBudget | null;
  /** Set when the batch's maxCostUsd was taken from this forecast. */
  budgetFromForecast: { quantile: ForecastQuantile; ifNoHistory: IfNoHistory } | null;
  groups: ForecastGroup[];
  total: ForecastTotal;
}

export interface BatchForecast extends StoredForecast {
  tasks: TaskForecast[];
}

/** A task planned: its agent, model and budget as a worker will resolve them, and its model's price. */
interface PlannedTask {
  agent: string;
  model: string;
  budget: Budget;
  price: ModelPrice | null;
}

/** The settings' defaults from a process's environment, read as a worker reads it. */
export function forecastDefaultsOf(env: Env): ForecastSettings['defaults'] {
  return { budget: fleetBudgetDefaults(env), model: env.LLM_MODEL, prices: configuredPrices(env) };
}

/** The history read for a batch: enough to build its forecast under any batch budget without reading again. */
export interface ForecastPlan {
  madeAt: Date;
  since: Date;
  budgetsFrom: 'catalog' | 'defaults';
  tasks: PlannedTask[];
  histories: Map<string, CostHistory>;
}

const key = (agent: string, model: string) => JSON.stringify([agent, model]);

/**
 * Resolves every task's agent, model and budget (from the catalog's agent when there is one, else the defaults)
 * and reads the history of each distinct agent and model once. The tasks must have been validated (and checked
 * against the catalog: a budget above a ceiling throws InputError here as on a worker).
 */
export async function planForecast(
  settings: ForecastSettings,
  tasks: readonly AgentTask[],
  catalog: Catalog | null,
  now: Date = new Date(),
): Promise<ForecastPlan> {
  const { defaults } = settings;
  const planned = tasks.map((task): PlannedTask => {
    const name = task.agent ?? DEFAULT_AGENT;
    const agent: BudgetSource = catalog?.agents.find((a) => a.name === name) ?? { name };
    const model = resolveTaskModel(task, agent, defaults.model);
    return {
      agent: name,
      model,
      budget: resolveTaskBudget(task, agent, defaults.budget),
      price: knownPrice(model, defaults.prices),
    };
  });
  const since = new Date(now.getTime() - HISTORY_DAYS * 86_400_000);
  const pairs = new Map(planned.map((task) => [key(task.agent, task.model), task]));
  const histories = new Map<string, CostHistory>();
  const timeoutMs = settings.timeoutMs ?? HISTORY_TIMEOUT_MS;
  await withTimeout(
    Promise.all(
      [...pairs].map(async ([pair, task]) => {
        histories.set(pair, await settings.history.costHistory(task.agent, task.model, since));
      }),
    ),
    timeoutMs,
    { timedOut: () => new Error(`the run history did not answer within ${timeoutMs} ms`) },
  );
  return { madeAt: now, since, budgetsFrom: catalog ? 'catalog' : 'defaults', tasks: planned, histories };
}

function knownPrice(
  model: string,
  prices: Readonly<Record<string, ModelPrice>> | undefined,
): ModelPrice | null {
  try {
    return priceOf(model, prices ?? {});
  } catch {
    return null; // a worker refuses the task; its worst case is then its maxCostUsd alone
  }
}

/**
 * The forecast a batch is enqueued with, or why there is none: a forecast never stands in the way of a batch, so
 * a store that fails or does not answer gives `forecast: null` and the reason.
 */
export async function forecastForEnqueue(
  settings: ForecastSettings,
  batch: { tasks: readonly AgentTask[]; budget?: BatchBudget | undefined },
  catalog: Catalog | null,
): Promise<{ forecast: BatchForecast | null; error: string | null }> {
  try {
    const plan = await planForecast(settings, batch.tasks, catalog);
    return { forecast: buildForecast(plan, batch.budget ?? null), error: null };
  } catch (error) {
    return { forecast: null, error: error instanceof Error ? error.message : String(error) };
  }
}

/** The forecast of a plan under a batch budget. Pure. */
export function buildForecast(
  plan: ForecastPlan,
  batchBudget: BatchBudget | null,
  budgetFromForecast: StoredForecast['budgetFromForecast'] = null,
): BatchForecast {
  const tasks = plan.tasks.map((task, i): TaskForecast => {
    const worstCase = taskWorstCase(task);
    const history = plan.histories.get(key(task.agent, task.model)) ?? NO_HISTORY;
    return {
      index: i + 1,
      agent: task.agent,
      model: task.model,
      worstCase,
      expected: expectedCost(history, worstCase.costUsd),
    };
  });

  const groups = new Map<string, ForecastGroup>();
  for (const task of tasks) {
    const pair = key(task.agent, task.model);
    let group = groups.get(pair);
    if (!group) {
      const history = expectedCost(plan.histories.get(pair) ?? NO_HISTORY, Infinity);
      group = {
        agent: task.agent,
        model: task.model,
        tasks: 0,
        worstCase: { costUsd: 0, tokens: 0 },
        history,
        expected: history ? { p50Usd: 0, p90Usd: 0, meanUsd: 0 } : null,
      };
      groups.set(pair, group);
    }
    group.tasks++;
    addWorst(group.worstCase, task.worstCase);
    if (group.expected && task.expected) addExpected(group.expected, task.expected);
  }

  const worst = { costUsd: 0, tokens: 0 };
  for (const task of tasks) addWorst(worst, task.worstCase);
  const cappedCost = batchBudget?.maxCostUsd !== undefined && batchBudget.maxCostUsd < worst.costUsd;
  const cappedTokens = batchBudget?.maxTokens !== undefined && batchBudget.maxTokens < worst.tokens;
  const totalWorst = {
    costUsd: cappedCost ? batchBudget.maxCostUsd! : money(worst.costUsd),
    tokens: cappedTokens ? batchBudget.maxTokens! : worst.tokens,
    cappedByBatchBudget: cappedCost || cappedTokens,
  };
  const withHistory = tasks.filter((task) => task.expected !== null);
  let expected: ForecastTotal['expected'] = null;
  if (withHistory.length > 0) {
    const sums = { p50Usd: 0, p90Usd: 0, meanUsd: 0 };
    for (const task of withHistory) addExpected(sums, task.expected!);
    expected = {
      p50Usd: Math.min(money(sums.p50Usd), totalWorst.costUsd),
      p90Usd: Math.min(money(sums.p90Usd), totalWorst.costUsd),
      meanUsd: Math.min(money(sums.meanUsd), totalWorst.costUsd),
    };
  }
  for (const group of groups.values()) {
    group.worstCase.costUsd = money(group.worstCase.costUsd);
    if (group.expected) {
      group.expected = {
        p50Usd: money(group.expected.p50Usd),
        p90Usd: money(group.expected.p90Usd),
        meanUsd: money(group.expected.meanUsd),
      };
    }
  }
  return {
    madeAt: plan.madeAt.toISOString(),
    historySince: plan.since.toISOString(),
    method: FORECAST_METHOD,
    budgetsFrom: plan.budgetsFrom,
    batchBudget,
    budgetFromForecast,
    groups: [...groups.values()],
    total: {
      tasks: tasks.length,
      worstCase: totalWorst,
      expected,
      tasksWithHistory: withHistory.length,
      tasksWithoutHistory: tasks.length - withHistory.length,
    },
    tasks,
  };
}

/** maxTokens, and maxCostUsd or maxTokens at the dearest token price when that is lower. */
function taskWorstCase(task: PlannedTask): WorstCase {
  const { maxCostUsd, maxTokens } = task.budget;
  if (!task.price) return { costUsd: maxCostUsd, tokens: maxTokens };
  const dearest = Math.max(task.price.inputPerMillion, task.price.outputPerMillion);
  return { costUsd: Math.min(maxCostUsd, money((maxTokens * dearest) / 1_000_000)), tokens: maxTokens };
}

function expectedCost(history: CostHistory, cap: number): ExpectedCost | null {
  if (history.runs === 0 || history.p50Usd === null || history.p90Usd === null || history.meanUsd === null) {
    return null;
  }
  return {
    runs: history.runs,
    fewRuns: history.runs < FEW_RUNS,
    p50Usd: Math.min(history.p50Usd, cap),
    p90Usd: Math.min(history.p90Usd, cap),
    meanUsd: Math.min(money(history.meanUsd), cap),
  };
}

function addWorst(into: WorstCase, worst: WorstCase): void {
  into.costUsd += worst.costUsd;
  into.tokens += worst.tokens;
}

function addExpected(
  into: { p50Usd: number; p90Usd: number; meanUsd: number },
  expected: Pick<ExpectedCost, 'p50Usd' | 'p90Usd' | 'meanUsd'>,
): void {
  into.p50Usd += expected.p50Usd;
  into.p90Usd += expected.p90Usd;
  into.meanUsd += expected.meanUsd;
}

/** The store's 10 decimals: float sums drift in the last bits. */
function money(usd: number): number {
  return Number(usd.toFixed(10));
}

/** The forecast without its per-task lines, as stored with the batch (its size does not grow with the tasks). */
export function storedForecast(forecast: BatchForecast): StoredForecast {
  const { tasks: _tasks, ...stored } = forecast;
  return stored;
}

/** No forecast can be made (no history source), or no batch budget from it; nothing was enqueued. */
export class ForecastError extends InputError {
  constructor(message: string) {
    super('forecast_refused', message);
  }
}

/**
 * The batch's maxCostUsd from the forecast: the sum over its tasks of their expected cost at `quantile` (capped
 * at each task's worst case), rounded up to a micro-dollar. A task without history is refused by default, or
 * counted at its worst case with `ifNoHistory: 'worst-case'`.
 */
export function maxCostFromForecast(
  forecast: BatchForecast,
  quantile: ForecastQuantile,
  ifNoHistory: IfNoHistory = 'refuse',
): number {
  const missing = forecast.tasks.filter((task) => task.expected === null);
  if (missing.length > 0 && ifNoHistory === 'refuse') {
    const pairs = [...new Set(missing.map((task) => `${task.agent} on ${task.model}`))];
    const lines = missing.slice(0, 10).map((task) => task.index);
    throw new ForecastError(
      `cannot set the batch budget from the forecast's ${quantile}: ${missing.length} task(s) have no history ` +
        `(no finished run of ${pairs.join(', ')} in the last ${HISTORY_DAYS} days; tasks ${lines.join(', ')}` +
        `${missing.length > 10 ? ', …' : ''}). Count them at their worst case (--if-no-history worst-case, ` +
        `ifNoHistory: "worst-case") or give the budget yourself (--batch-max-cost).`,
    );
  }
  const field = quantile === 'p50' ? 'p50Usd' : 'p90Usd';
  const total = forecast.tasks.reduce(
    (sum, task) => sum + (task.expected ? task.expected[field] : task.worstCase.costUsd),
    0,
  );
  const usd = Math.ceil(Number((total * 1_000_000).toFixed(4))) / 1_000_000;
  if (!(usd > 0)) {
    throw new ForecastError(
      `cannot set the batch budget from the forecast's ${quantile}: it is $0 (the recorded runs cost nothing); ` +
        'give the budget yourself (--batch-max-cost)',
    );
  }
  return usd;
}
