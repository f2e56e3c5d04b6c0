// The batch report for a terminal: a header, an aligned table of the tasks and the totals. Texts are cut to
// one line and stripped of control characters, so an answer cannot move the cursor or recolour the terminal.
import type { BatchReport, TaskReportRow } from './batch-summary.js';
import { outputTable } from './output-columns.js';
import { forecastTextLines } from './forecast-section.js';
import { tenantTextLines } from './tenant-section.js';
import { approvalTextLines } from './approvals-section.js';
import { CALLED_NOTE, calledTextCells, hasCalledRuns } from './called-section.js';
import { formatInt, formatPercent, formatTime, formatUsd, label, terminalSafe } from './text.js';

const TASK_CHARS = 48;
const JOB_CHARS = 24;

export function renderText(report: BatchReport): string {
  const { summary } = report;
  const finished = summary.tasks - report.running - report.pending;
  const out: string[] = [];
  const name = report.name === null ? '' : ` "${cell(report.name, 60)}"`;
  out.push(
    `Batch ${cell(report.batchId, 64)}${name}: ${report.state}, ${finished} of ${summary.tasks} tasks finished`,
    `Created ${formatTime(report.createdAt)}${report.completedAt === null ? '' : `, completed ${formatTime(report.completedAt)}`}`,
    '',
  );

  const header = [
    '#',
    'Job',
    'Status',
    'Stop reason',
    'Steps',
    'Tools',
    'Prompt',
    'Completion',
    'Cost',
    'Task',
  ];
  const right = [true, false, false, false, true, true, true, true, true, false];
  // The runs a task called, under it: their cells cut and made terminal-safe as the task's are.
  const body = report.rows.flatMap((row) => [
    rowCells(row),
    ...calledTextCells(row).map((cells) => cells.map((text) => cell(text, TASK_CHARS))),
  ]);
  out.push(...table(header, body, right), '');
  if (hasCalledRuns(report)) out.push(CALLED_NOTE, '');
  const outputs = outputTable(report.rows);
  if (outputs) {
    const cells = outputs.rows.map((row) => [
      String(row.index),
      cell(row.jobId, JOB_CHARS),
      ...(row.cells?.map(terminalSafe) ?? ['(no output)', ...outputs.columns.slice(1).map(() => '')]),
    ]);
    const names = outputs.columns.map(terminalSafe);
    out.push('Outputs:', ...table(['#', 'Job', ...names], cells, [true]), '');
  }

  out.push(
    `Tasks:     ${summary.tasks} (${summary.succeeded} succeeded, ${summary.stopped} stopped, ${summary.failed} failed, ${report.running} running, ${report.pending} pending)`,
    `Tokens:    ${formatInt(summary.usage.totalTokens)} total (${formatInt(summary.usage.promptTokens)} prompt, ${formatInt(summary.usage.completionTokens)} completion)${tokenDetails(summary.usage)}`,
    `Cost:      ${formatUsd(summary.usage.costUsd)}${budgetText(report)}${flexText(summary.usage)}`,
  );
  if (report.running + report.pending > 0) {
    out.push('           (running and pending tasks are not in the totals yet)');
  }
  out.push(...tenantTextLines(report));
  out.push(...forecastTextLines(report));
  out.push(...approvalTextLines(report));
  for (const warning of report.warnings) out.push(`Warning:   ${terminalSafe(warning)}`);
  for (const email of report.emails) {
    const note = email.note === null ? '' : `: ${cell(email.note, 120)}`;
    out.push(
      `Email:     task ${email.index} (${cell(email.jobId, JOB_CHARS)}) ${email.state.replace('_', ' ')}, to ${cell(email.recipient, 80)} (message-id ${cell(email.messageId, 80)})${note}`,
    );
  }
  return out.join('\n') + '\n';
}

function rowCells(row: TaskReportRow): string[] {
  const dash = '-';
  const num = (value: number | null) => (value === null ? dash : formatInt(value));
  return [
    String(row.index),
    cell(row.jobId, JOB_CHARS),
    row.status,
    row.stopReason ?? dash,
    num(row.steps),
    num(row.toolCalls),
    num(row.promptTokens),
    num(row.completionTokens),
    row.costUsd === null ? dash : formatUsd(row.costUsd),
    row.task === null ? dash : cell(row.task, TASK_CHARS),
  ];
}

function table(header: string[], rows: string[][], right: boolean[]): string[] {
  const widths = header.map((title, i) => Math.max(width(title), ...rows.map((row) => width(row[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((text, i) => {
        const pad = ' '.repeat(Math.max(0, (widths[i] ?? 0) - width(text)));
        return right[i] ? pad + text : text + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

/** Code points, which is how most terminals advance for the Latin, Cyrillic and similar text of tasks. */
function width(text: string): number {
  return [...text].length;
}

function cell(text: string, max: number): string {
  return label(terminalSafe(text), max);
}

function budgetText(report: BatchReport): string {
  const { maxCostUsd, maxTokens } = report.budget;
  const parts: string[] = [];
  if (maxCostUsd !== null) {
    parts.push(
      `${formatPercent(report.summary.usage.costUsd, maxCostUsd)} of the ${formatUsd(maxCostUsd)} budget`,
    );
  }
  if (maxTokens !== null) {
    parts.push(
      `${formatPercent(report.summary.usage.totalTokens, maxTokens)} of ${formatInt(maxTokens)} tokens`,
    );
  }
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

/** The cached and reasoning parts, where the endpoint reported some: `; 1,024 cached, 96 reasoning`. */
function tokenDetails(usage: BatchReport['summary']['usage']): string {
  const parts: string[] = [];
  if (usage.cachedPromptTokens) parts.push(`${formatInt(usage.cachedPromptTokens)} cached`);
  if (usage.reasoningTokens) parts.push(`${formatInt(usage.reasoningTokens)} reasoning`);
  return parts.length > 0 ? `; ${parts.join(', ')}` : '';
}

/** The flex tier's saving, where some call went at it: ` (the flex tier saved $0.0123)`. */
function flexText(usage: BatchReport['summary']['usage']): string {
  return usage.flexSavedUsd ? ` (the flex tier saved ${formatUsd(usage.flexSavedUsd)})` : '';
}
