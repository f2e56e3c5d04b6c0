// A run and the runs its agent called, recursively (docs/child-agents.md, "Seeing the tree"), as
// `npm run trace -- --job ID` prints it. Bounded both ways: a tree deeper than any the fleet makes, or larger than a
// terminal can usefully show, is cut, and what was cut is listed by job id, each a run to trace on its own.
import { childJobId } from '../queue/child-job-id.js';
import { callKeyOf } from '../kernel/turn-approvals.js';
import {
  buildTimeline,
  type ConsoleRun,
  type ConsoleStep,
  type Timeline,
  type TreeChild,
} from './timeline.js';

/** The deepest a task's `parent.depth` may be (task-schema.ts): every tree the fleet makes fits. */
export const TREE_MAX_DEPTH = 10;
/** Runs printed at most, the root's included. */
export const TREE_MAX_RUNS = 50;

export interface TraceTree {
  timeline: Timeline;
  /** The runs it called that were loaded, in the order they started. */
  called: TraceTree[];
  /** Those it called that were not: past the depth or the number of runs. */
  cut: TreeChild[];
}

export type LoadRun = (
  jobId: string,
) => Promise<{ run: ConsoleRun; steps: ConsoleStep[]; children: TreeChild[] } | null>;

export interface TreeBounds {
  maxDepth: number;
  maxRuns: number;
}

/** The tree under `jobId`, depth first in the order the runs started; null when there is no such run. */
export async function loadTraceTree(
  load: LoadRun,
  jobId: string,
  bounds: TreeBounds = { maxDepth: TREE_MAX_DEPTH, maxRuns: TREE_MAX_RUNS },
): Promise<TraceTree | null> {
  let budget = bounds.maxRuns;
  const visit = async (id: string, depth: number): Promise<TraceTree | null> => {
    const loaded = await load(id);
    if (!loaded) return null;
    budget--;
    const tree: TraceTree = {
      timeline: buildTimeline(loaded.run, loaded.steps, loaded.children),
      called: [],
      cut: [],
    };
    for (const child of loaded.children) {
      const sub = depth < bounds.maxDepth && budget > 0 ? await visit(child.jobId, depth + 1) : null;
      if (sub) tree.called.push(sub);
      else tree.cut.push(child);
    }
    return tree;
  };
  return visit(jobId, 0);
}

/** The job id of the child that a tool call of the timeline's run started (if it called an agent). */
export function childJobOf(runJobId: string, step: number, index: number): string {
  // A tool call's index counts from 1; a call's key from the call's place in its turn, as the kernel makes it.
  return childJobId(callKeyOf(runJobId, step, index - 1));
}
