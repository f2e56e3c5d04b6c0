// A succeeded result of one job, for tests that publish results without running a model.
import type { AgentResult } from '../../src/kernel/types.js';

export function succeededResult(jobId: string, overrides: Partial<AgentResult> = {}): AgentResult {
  return {
    jobId,
    status: 'succeeded',
    stopReason: 'answer',
    answer: `answer of ${jobId}`,
    steps: 2,
    toolCalls: 1,
    usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.0001 },
    error: null,
    ...overrides,
  };
}
