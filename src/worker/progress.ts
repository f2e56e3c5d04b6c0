// What a job shows while it runs: a progress object (Bull Board, the API, the CLI's --wait) and one log
// line per step.
import type { StepTrace } from '../kernel/types.js';
import { scrubText } from '../logging/redact.js';

export interface TaskProgress {
  step: number;
  maxSteps: number;
  toolCalls: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  costUsd: number;
}

export function progressOf(trace: StepTrace): TaskProgress {
  const t = trace.totals;
  return {
    step: t.steps,
    maxSteps: t.maxSteps,
    toolCalls: t.toolCalls,
    promptTokens: t.promptTokens,
    completionTokens: t.completionTokens,
    totalTokens: t.totalTokens,
    costUsd: t.costUsd,
  };
}

export function stepLogLine(trace: StepTrace): string {
  const what =
    trace.kind === 'action'
      ? trace.actions.map((a) => a.tool).join(', ')
      : trace.kind === 'invalid'
        ? 'invalid reply'
        : trace.kind === 'final'
          ? 'final answer (limit reached)'
          : 'answer';
  // The board shows job logs as they are: an error quoting a URL must not carry its password there.
  const error = trace.error ? ` · error: ${scrubText(trace.error)}` : '';
  const t = trace.totals;
  return (
    `step ${trace.step}/${t.maxSteps}: ${what} · ${trace.promptTokens + trace.completionTokens} tokens, ` +
    `${trace.latencyMs} ms · total ${t.totalTokens} tokens $${t.costUsd.toFixed(4)}${error}`
  );
}
