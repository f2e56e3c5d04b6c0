// What a batch report reads of each run, in a module of its own: the summary and the forecast's comparison both
// read it.
import type { RunError } from '../kernel/errors.js';
import type { StopReason } from '../kernel/types.js';
import type { RunRowStatus } from '../store/rows.js';

/** What the report reads of an agent_runs row; a RunRow of src/store/rows.ts is one. */
export interface BatchRunInput {
  jobId: string;
  task: string;
  status: RunRowStatus;
  stopReason: StopReason | null;
  answer: string | null;
  steps: number;
  toolCalls: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Parts of the tokens above; absent or 0 when the endpoint reported none. */
  cachedPromptTokens?: number;
  reasoningTokens?: number;
  costUsd: number;
  /** What the flex tier saved the run against the standard prices. */
  flexSavedUsd?: number;
  error?: RunError | null;
  /** Why a budget stopped the run, in numbers (the result's stopDetail). */
  stopDetail?: string | null;
  /** Present for a run whose agent has an output schema (null: it ended without a value). */
  output?: unknown;
  /** The run's agent and model, for the forecast's groups. */
  agent?: string | null;
  model?: string;
  /** Whom the task ran for (the task's `tenant`), for the per-tenant totals. */
  tenant?: string | null;
  /** Set for a child agent's run: counted in its parent's usage, not as a task of the batch. */
  parentJobId?: string | null;
  /** When the run started: the runs a task called are listed in that order. */
  startedAt?: Date;
}
