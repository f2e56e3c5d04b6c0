// A finished run's row as the result it was published as: every result is recorded in MySQL
// before it goes to agent-results, so the row is what a result trimmed from Redis said.
import type { AgentResult } from '../kernel/types.js';
import type { RunRow } from './rows.js';

/** null while the run has not finished. */
export function resultOfRun(run: RunRow): AgentResult | null {
  if (run.status === 'running' || run.stopReason === null) return null;
  const result: AgentResult = {
    jobId: run.jobId,
    status: run.status,
    stopReason: run.stopReason,
    answer: run.answer,
    steps: run.steps,
    toolCalls: run.toolCalls,
    usage: {
      promptTokens: run.promptTokens,
      completionTokens: run.completionTokens,
      totalTokens: run.totalTokens,
      costUsd: run.costUsd,
    },
    error: run.error,
  };
  if (run.output !== undefined) result.output = run.output;
  return result;
}
