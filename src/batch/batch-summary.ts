// The batch summary of CONTRACT §9: counts and usage summed over the results of its tasks, so it always
// equals what the tasks' own results say.
import type { AgentResult } from '../agent/types.js';
import type { Usage } from '../agent/budget.js';

export interface BatchSummary {
  batchId: string;
  tasks: number;
  succeeded: number;
  stopped: number;
  failed: number;
  usage: Usage;
}

export function summarizeBatch(
  batchId: string,
  tasks: number,
  results: readonly AgentResult[],
): BatchSummary {
  const summary: BatchSummary = {
    batchId,
    tasks,
    succeeded: 0,
    stopped: 0,
    failed: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
  };
  for (const result of results) {
    summary[result.status]++;
    summary.usage.promptTokens += result.usage.promptTokens;
    summary.usage.completionTokens += result.usage.completionTokens;
    summary.usage.totalTokens += result.usage.totalTokens;
    summary.usage.costUsd += result.usage.costUsd;
    if (result.usage.cachedPromptTokens)
      summary.usage.cachedPromptTokens =
        (summary.usage.cachedPromptTokens ?? 0) + result.usage.cachedPromptTokens;
    if (result.usage.reasoningTokens)
      summary.usage.reasoningTokens = (summary.usage.reasoningTokens ?? 0) + result.usage.reasoningTokens;
  }
  // Summing floats drifts in the last bits; the store keeps 10 decimals, and so does the summary.
  summary.usage.costUsd = Number(summary.usage.costUsd.toFixed(10));
  return summary;
}
