// The batch report as Markdown (GitHub-flavoured tables). Table cells are one line, cut, with Markdown and HTML
// characters backslash-escaped, so a task or an answer can neither break the table nor inject HTML; answers
// are repeated in full (up to ANSWER_MAX_CHARS) in fenced blocks, which render their content as plain text.
import { reportTotals, type BatchReport, type TaskReportRow } from './batch-summary.js';
import { outputTable } from './output-columns.js';
import { forecastMarkdown } from './forecast-section.js';
import { tenantMarkdown } from './tenant-section.js';
import { approvalMarkdown } from './approvals-section.js';
import { CALLED_NOTE, calledMarkdownRows, hasCalledRuns } from './called-section.js';
import { describeBudget, formatInt, formatTime, formatUsd, label, md, oneLine, truncate } from './text.js';

export interface MarkdownOptions {
  /** The chart's file name, relative to the Markdown file; no image when absent. */
  chartFile?: string;
}

export const TASK_TABLE_HEADER =
  '| # | Job | Task | Status | Stop reason | Steps | Tool calls | Prompt tokens | Completion tokens | Cost (USD) | Answer |';
/** The report keeps this much of each answer; the full text stays in agent_runs. */
export const ANSWER_MAX_CHARS = 4_000;
const TASK_CELL_CHARS = 80;
const ANSWER_CELL_CHARS = 100;

export function renderMarkdown(report: BatchReport, options: MarkdownOptions = {}): string {
  const { summary } = report;
  const out: string[] = [];
  out.push(`# Batch report: ${md(report.batchId)}`, '');
  if (report.name !== null) out.push(`- **Name:** ${md(label(report.name, 200))}`);
  out.push(
    `- **State:** ${report.state} (${summary.tasks - report.running - report.pending} of ${summary.tasks} tasks finished)`,
    `- **Created:** ${formatTime(report.createdAt)}`,
  );
  if (report.completedAt !== null) out.push(`- **Completed:** ${formatTime(report.completedAt)}`);
  out.push(
    `- **Budget:** ${describeBudget(report)}`,
    `- **Generated:** ${formatTime(report.generatedAt)}`,
    '',
  );

  out.push('## Totals', '', '| | |', '| --- | ---: |');
  const totals: [string, string][] = [
    ...reportTotals(report).map(([name, value]): [string, string] => [name, formatInt(value)]),
    ['Cost (USD)', `**${formatUsd(summary.usage.costUsd)}**`],
    ...(summary.usage.flexSavedUsd
      ? ([['Saved by the flex tier (USD)', formatUsd(summary.usage.flexSavedUsd)]] as [string, string][])
      : []),
  ];
  for (const [name, value] of totals) out.push(`| ${name} | ${value} |`);
  out.push('');
  if (report.running + report.pending > 0) {
    out.push(`Running and pending tasks are not in the totals yet: they count when their run finishes.`, '');
  }
  out.push(...tenantMarkdown(report));
  out.push(...forecastMarkdown(report));
  out.push(...approvalMarkdown(report));

  if (report.warnings.length > 0) {
    out.push('## Warnings', '');
    for (const warning of report.warnings) out.push(`- ${md(oneLine(warning))}`);
    out.push('');
  }

  if (report.emails.length > 0) {
    out.push(
      '## Emails not known to be delivered',
      '',
      '| # | Job | State | Recipient | Message-ID | Note |',
    );
    out.push('| ---: | --- | --- | --- | --- | --- |');
    for (const e of report.emails) {
      const cells = [e.jobId, e.state.replace('_', ' '), e.recipient, e.messageId, e.note ?? ''];
      out.push(`| ${e.index} | ${cells.map((c) => md(oneLine(c))).join(' | ')} |`);
    }
    out.push('');
  }

  if (options.chartFile !== undefined) {
    out.push('## Chart', '', `![Cost and steps per task](${encodeURIComponent(options.chartFile)})`, '');
  }

  out.push(
    '## Tasks',
    '',
    TASK_TABLE_HEADER,
    '| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |',
  );
  for (const row of report.rows) out.push(taskRow(row), ...calledMarkdownRows(row));
  out.push('');
  if (hasCalledRuns(report)) out.push(CALLED_NOTE, '');

  const outputs = outputTable(report.rows);
  if (outputs) {
    out.push('## Outputs', '', `| # | Job | ${outputs.columns.map(md).join(' | ')} |`);
    out.push(`| ---: | --- |${' --- |'.repeat(outputs.columns.length)}`);
    for (const row of outputs.rows) {
      const cells = row.cells?.map(md) ?? ['— (no output)', ...outputs.columns.slice(1).map(() => '')];
      out.push(`| ${row.index} | ${md(label(row.jobId, 64))} | ${cells.join(' | ')} |`);
    }
    out.push('');
  }

  const answered = report.rows.filter(
    (row) => row.answer !== null || row.error !== null || row.stopDetail !== undefined,
  );
  if (answered.length > 0) {
    out.push('## Answers', '');
    for (const row of answered) {
      out.push(`### ${row.index}. Job ${md(row.jobId)}: ${row.status}`, '');
      if (row.task !== null) out.push(`Task: ${md(label(row.task, 500))}`, '');
      if (row.error !== null) out.push(`Error: ${md(label(row.error, 500))}`, '');
      if (row.stopDetail) out.push(`Why it stopped: ${md(label(row.stopDetail, 500))}`, '');
      if (row.answer !== null) out.push(...fenced(truncate(row.answer, ANSWER_MAX_CHARS)), '');
    }
  }
  return out.join('\n');
}

function taskRow(row: TaskReportRow): string {
  const dash = '—';
  const num = (value: number | null) => (value === null ? dash : formatInt(value));
  const answer = row.answer ?? (row.error === null ? null : `error: ${row.error}`);
  const cells = [
    String(row.index),
    md(label(row.jobId, 64)),
    row.task === null ? dash : md(label(row.task, TASK_CELL_CHARS)),
    row.status,
    row.stopReason ?? dash,
    num(row.steps),
    num(row.toolCalls),
    num(row.promptTokens),
    num(row.completionTokens),
    row.costUsd === null ? dash : formatUsd(row.costUsd),
    answer === null ? dash : md(label(answer, ANSWER_CELL_CHARS)),
  ];
  return `| ${cells.join(' | ')} |`;
}

/** A fenced block that the content cannot close: the fence is longer than any backtick run inside. */
function fenced(text: string): string[] {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [`${fence}text`, text.replace(/\r\n?/g, '\n'), fence];
}
