// A tree of runs (trace-tree.ts) as text for `npm run trace -- --job ID`: the root's timeline, and under each call
// of a child agent that child's own timeline, indented a level, its children under its calls in turn. A child no
// call of the recorded steps started (its parent still waits for it) comes after its parent's timeline.
import { terminalSafe } from '../reports/text.js';
import { renderTimelineText } from './render-timeline-text.js';
import { childJobOf, type TraceTree } from './trace-tree.js';
import type { TimelineEntry } from './timeline.js';

const LEVEL = '      │ ';

export function renderTraceTree(tree: TraceTree): string {
  const byJob = new Map(tree.called.map((child) => [child.timeline.run.jobId, child] as const));
  const placed = new Set<string>();
  const nested = (child: TraceTree): string[] =>
    renderTraceTree(child)
      .trimEnd()
      .split('\n')
      .map((line) => `${LEVEL}${line}`.trimEnd());
  const afterEntry = (entry: TimelineEntry): string[] => {
    if (entry.type !== 'tool_call') return [];
    const child = byJob.get(childJobOf(tree.timeline.run.jobId, entry.step, entry.index));
    if (!child || placed.has(child.timeline.run.jobId)) return [];
    placed.add(child.timeline.run.jobId);
    return [`      ↳ run of the agent it called:`, ...nested(child)];
  };
  const text = renderTimelineText(tree.timeline, { afterEntry });
  const lines: string[] = [];
  const unplaced = tree.called.filter((child) => !placed.has(child.timeline.run.jobId));
  if (unplaced.length > 0) {
    lines.push('', 'agents it called, not yet in its steps:');
    for (const child of unplaced) lines.push(...nested(child));
  }
  if (tree.cut.length > 0) {
    lines.push(
      '',
      `not printed (past the tree's bounds: ${tree.cut.length}; each is a run: npm run trace -- --job ID):`,
      ...tree.cut.map((child) => `  ${terminalSafe(child.jobId)}`),
    );
  }
  return lines.length === 0 ? text : `${text}${lines.join('\n')}\n`;
}
