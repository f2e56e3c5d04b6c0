// The runs a batch's tasks called (docs/child-agents.md), as the report lists them under their task: each child
// agent's run, and those it called in turn, depth first in the order they started. Listed, never counted: a
// child's run carries its parent's batch, and its usage is already in its parent's, so the totals count each
// tree once, as its task.
import type { StopReason } from '../kernel/types.js';
import type { RunRowStatus } from '../store/rows.js';
import type { BatchRunInput } from './batch-run-input.js';

/** Runs listed under one task at most; past it, the report says how many more there are. */
export const CALLED_LISTED_PER_TASK = 100;

/** A run a task's agent called, directly (depth 1) or through another (2, …). */
export interface CalledRunRow {
  jobId: string;
  agent: string;
  status: RunRowStatus;
  stopReason: StopReason | null;
  costUsd: number;
  depth: number;
}

export interface CalledRuns {
  rows: CalledRunRow[];
  /** Runs of the tree past CALLED_LISTED_PER_TASK, not listed. */
  notListed: number;
}

/** By task job id: the runs its tree called. Tasks that called none have no entry. */
export function calledRunsByTask(
  taskJobIds: ReadonlySet<string>,
  runs: readonly BatchRunInput[],
): Map<string, CalledRuns> {
  const byParent = new Map<string, BatchRunInput[]>();
  for (const run of runs) {
    if (!run.parentJobId || taskJobIds.has(run.jobId)) continue;
    const siblings = byParent.get(run.parentJobId) ?? [];
    siblings.push(run);
    byParent.set(run.parentJobId, siblings);
  }
  for (const siblings of byParent.values()) siblings.sort(byStart);
  const result = new Map<string, CalledRuns>();
  for (const taskJobId of taskJobIds) {
    const called: CalledRuns = { rows: [], notListed: 0 };
    // A parent_job_id that loops (rows written by hand) is walked once.
    const seen = new Set<string>([taskJobId]);
    const walk = (parent: string, depth: number): void => {
      for (const run of byParent.get(parent) ?? []) {
        if (seen.has(run.jobId)) continue;
        seen.add(run.jobId);
        if (called.rows.length < CALLED_LISTED_PER_TASK) called.rows.push(rowOf(run, depth));
        else called.notListed++;
        walk(run.jobId, depth + 1);
      }
    };
    walk(taskJobId, 1);
    if (called.rows.length > 0) result.set(taskJobId, called);
  }
  return result;
}

function rowOf(run: BatchRunInput, depth: number): CalledRunRow {
  return {
    jobId: run.jobId,
    agent: run.agent ?? 'default',
    status: run.status,
    stopReason: run.stopReason,
    costUsd: run.costUsd,
    depth,
  };
}

function byStart(a: BatchRunInput, b: BatchRunInput): number {
  const at = (run: BatchRunInput) => run.startedAt?.getTime() ?? 0;
  return at(a) - at(b) || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);
}
