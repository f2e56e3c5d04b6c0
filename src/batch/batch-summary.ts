// The batch summary: counts and usage summed over the finished tasks of a batch. One tally makes it,
// for the aggregator and the client (from results) and for the report (from run rows), so they always agree.
//
// Sums are exact: tokens are integers, and dollars are added as integers of 10^-12 USD, then rounded (half up) to
// the 10 decimals of the store's DECIMAL(16,10), so the total is the same whatever the order of the tasks.
import type { AgentResult, RunStatus } from '../kernel/types.js';
import type { Usage } from '../kernel/budget.js';

export interface BatchSummary {
  batchId: string;
  tasks: number;
  succeeded: number;
  stopped: number;
  failed: number;
  usage: Usage;
}

/** What the tally reads of a finished task: a result's usage, or an agent_runs row's columns. */
export interface TaskUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  costUsd: number;
  cachedPromptTokens?: number;
  reasoningTokens?: number;
  flexSavedUsd?: number;
}

const SCALE = 12; // decimals of the integers dollars are added as
const STORE_DECIMALS = 10; // DECIMAL(16,10)

export class BatchTally {
  private readonly counts = { succeeded: 0, stopped: 0, failed: 0 };
  private promptTokens = 0;
  private completionTokens = 0;
  private totalTokens = 0;
  private cachedPromptTokens = 0;
  private reasoningTokens = 0;
  private costUnits = 0n;
  private flexSavedUnits = 0n;

  add(status: RunStatus, usage: TaskUsage): void {
    this.counts[status]++;
    this.promptTokens += usage.promptTokens;
    this.completionTokens += usage.completionTokens;
    this.totalTokens += usage.totalTokens;
    this.cachedPromptTokens += usage.cachedPromptTokens ?? 0;
    this.reasoningTokens += usage.reasoningTokens ?? 0;
    this.costUnits += toUnits(usage.costUsd);
    this.flexSavedUnits += toUnits(usage.flexSavedUsd ?? 0);
  }

  summary(batchId: string, tasks: number): BatchSummary {
    const usage: Usage = {
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      totalTokens: this.totalTokens,
      costUsd: unitsToUsd(this.costUnits),
    };
    // The optional fields only where some task has them, as in each result.
    if (this.cachedPromptTokens > 0) usage.cachedPromptTokens = this.cachedPromptTokens;
    if (this.reasoningTokens > 0) usage.reasoningTokens = this.reasoningTokens;
    if (this.flexSavedUnits > 0n) usage.flexSavedUsd = unitsToUsd(this.flexSavedUnits);
    return { batchId, tasks, ...this.counts, usage };
  }
}

export function summarizeBatch(
  batchId: string,
  tasks: number,
  results: readonly AgentResult[],
): BatchSummary {
  const tally = new BatchTally();
  for (const result of results) tally.add(result.status, result.usage);
  return tally.summary(batchId, tasks);
}

/** Adds dollars the way the summary does: exact, then rounded to 10 decimals. */
export function sumCostUsd(costs: readonly number[]): number {
  return unitsToUsd(costs.reduce((sum, cost) => sum + toUnits(cost), 0n));
}

/** USD as an integer count of 10^-SCALE USD: the decimal closest to the double, so 0.1 is exactly 10^11. */
function toUnits(usd: number): bigint {
  const [whole = '0', fraction = ''] = usd.toFixed(SCALE).split('.');
  return BigInt(whole + fraction.padEnd(SCALE, '0'));
}

/** Rounded half up to the store's 10 decimals, back to a number (exact to the 10th decimal below $100,000). */
function unitsToUsd(units: bigint): number {
  const step = 10n ** BigInt(SCALE - STORE_DECIMALS);
  const rounded = ((units + step / 2n) / step).toString().padStart(STORE_DECIMALS + 1, '0');
  return Number(`${rounded.slice(0, -STORE_DECIMALS)}.${rounded.slice(-STORE_DECIMALS)}`);
}
