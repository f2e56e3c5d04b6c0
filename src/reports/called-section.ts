// The runs a task called (called-runs.ts), as rows right under the task's row of each rendering's task table:
// marked ↳ (one per level), with their agent, status, stop reason and cost, and nothing else: their usage is in
// their task's, so the totals count each tree once. Job ids and agent names come from the store and are escaped
// as every cell is; a child's answer is not shown (it is in its task's, as that task's model read it).
import type { BatchReport, TaskReportRow } from './batch-summary.js';
import type { CalledRunRow } from './called-runs.js';
import { escapeHtml as h, formatUsd, label, md } from './text.js';

export const CALLED_NOTE =
  'Rows marked ↳ are runs of the agents a task called (and those they called): each one’s cost covers the runs it called and is part of its task’s, so the totals count each tree once.';

const mark = (depth: number) => '↳'.repeat(Math.max(1, Math.min(depth, 10)));
const stopOf = (run: CalledRunRow, none: string) => run.stopReason ?? none;

export function hasCalledRuns(report: BatchReport): boolean {
  return report.rows.some((row) => row.called !== undefined);
}

/** Markdown rows of the tasks table (11 columns): # empty, the mark and the job, the agent in the task's column. */
export function calledMarkdownRows(row: TaskReportRow): string[] {
  const dash = '—';
  const rows = (row.called?.rows ?? []).map((run) => {
    const cells = [
      '',
      `${mark(run.depth)} ${md(label(run.jobId, 64))}`,
      `agent ${md(label(run.agent, 64))}`,
      run.status,
      stopOf(run, dash),
      dash,
      dash,
      dash,
      dash,
      formatUsd(run.costUsd),
      dash,
    ];
    return `| ${cells.join(' | ')} |`;
  });
  const more = row.called?.notListed ?? 0;
  if (more > 0) rows.push(`| | ↳ … ${more} more | | | | | | | | | |`);
  return rows;
}

/** HTML rows of the tasks table, escaped. */
export function calledHtmlRows(row: TaskReportRow): string[] {
  const none = '<span class="none">—</span>';
  const rows = (row.called?.rows ?? []).map((run) => {
    const cells = [
      '<td class="num"></td>',
      `<td>${mark(run.depth)} ${h(run.jobId)}</td>`,
      `<td class="task">agent ${h(label(run.agent, 64))}</td>`,
      `<td>${h(run.status)}</td>`,
      `<td>${run.stopReason === null ? none : h(run.stopReason)}</td>`,
      `<td class="num">${none}</td>`.repeat(4),
      `<td class="num">${h(formatUsd(run.costUsd))}</td>`,
      `<td class="answer">${none}</td>`,
    ];
    return `<tr class="called">${cells.join('')}</tr>`;
  });
  const more = row.called?.notListed ?? 0;
  if (more > 0) rows.push(`<tr class="called"><td></td><td colspan="10">↳ … ${more} more</td></tr>`);
  return rows;
}

/** Cells of the text table (10 columns), for the caller to cut and align; the caller makes them terminal-safe. */
export function calledTextCells(row: TaskReportRow): string[][] {
  const dash = '-';
  const rows = (row.called?.rows ?? []).map((run) => [
    '',
    `${mark(run.depth)} ${run.jobId}`,
    run.status,
    stopOf(run, dash),
    dash,
    dash,
    dash,
    dash,
    formatUsd(run.costUsd),
    `agent ${run.agent}`,
  ]);
  const more = row.called?.notListed ?? 0;
  if (more > 0) rows.push(['', `↳ … ${more} more`, '', '', '', '', '', '', '', '']);
  return rows;
}
