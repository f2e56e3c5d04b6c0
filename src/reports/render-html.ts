// The batch report as one self-contained HTML page: inline CSS, the chart as inline SVG, no script, no external
// resource. Every text that comes from the batch (ids, tasks, answers written by an LLM, error messages) goes
// through escapeHtml, and a Content-Security-Policy forbids scripts anyway, as a second line of defence.
import { reportTotals, type BatchReport, type TaskReportRow } from './batch-summary.js';
import { outputTable } from './output-columns.js';
import { forecastHtml } from './forecast-section.js';
import { tenantHtml } from './tenant-section.js';
import { approvalHtml } from './approvals-section.js';
import { CALLED_NOTE, calledHtmlRows, hasCalledRuns } from './called-section.js';
import { renderBatchChart, STATUS_COLORS } from './render-chart.js';
import { ANSWER_MAX_CHARS } from './render-markdown.js';
import {
  describeBudget,
  escapeHtml as h,
  formatInt,
  formatTime,
  formatUsd,
  label,
  truncate,
} from './text.js';

export interface HtmlOptions {
  /** The chart to embed (renderBatchChart's output); rendered from the report when absent. */
  chartSvg?: string;
}

const TASK_CELL_CHARS = 140;
const ANSWER_PREVIEW_CHARS = 120;

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;
  color: #212121; background: #fafafa; }
main { max-width: 1280px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 10px; }
.meta { color: #616161; margin: 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px; font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; margin-top: 18px; }
.card { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 10px 12px; }
.card .value { font-size: 20px; font-weight: 600; }
.card .name { color: #616161; font-size: 12px; }
.card.cost { border-color: #2e7d32; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #e0e0e0; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.tasks { width: 100%; font-size: 13px; }
table.tasks td.task { min-width: 220px; }
table.tasks tr.called td { color: #555; font-size: 12px; }
table.tasks td.answer { min-width: 260px; max-width: 480px; }
.error { color: #c62828; }
.why { color: #6d4c41; }
.none { color: #9e9e9e; }
details summary { cursor: pointer; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0 0; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
figure.chart { margin: 0; overflow-x: auto; background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px; }
figure.chart svg { max-width: 100%; height: auto; }
.warnings li { color: #e65100; }
footer { margin-top: 32px; color: #757575; font-size: 12px; }
@media print { body { background: #fff; } figure.chart { border: none; } }
`;

export function renderHtml(report: BatchReport, options: HtmlOptions = {}): string {
  const { summary } = report;
  const chart = (options.chartSvg ?? renderBatchChart(report)).trim();
  const finished = summary.tasks - report.running - report.pending;
  const stateColor = report.state === 'completed' ? STATUS_COLORS.succeeded : STATUS_COLORS.running;
  const cards: [string, string, string?][] = [
    ['Cost (USD)', formatUsd(summary.usage.costUsd), 'cost'],
    ...(summary.usage.flexSavedUsd
      ? ([['Saved by flex (USD)', formatUsd(summary.usage.flexSavedUsd)]] as [string, string][])
      : []),
    ['Total tokens', formatInt(summary.usage.totalTokens)],
    ['Tasks', formatInt(summary.tasks)],
    ['Succeeded', formatInt(summary.succeeded)],
    ['Stopped', formatInt(summary.stopped)],
    ['Failed', formatInt(summary.failed)],
  ];
  if (report.running > 0) cards.push(['Running', formatInt(report.running)]);
  if (report.pending > 0) cards.push(['Pending', formatInt(report.pending)]);

  const meta = [
    report.name === null ? null : h(label(report.name, 200)),
    `created ${h(formatTime(report.createdAt))}`,
    report.completedAt === null ? null : `completed ${h(formatTime(report.completedAt))}`,
    `report generated ${h(formatTime(report.generatedAt))}`,
  ].filter((part) => part !== null);

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Batch report: ${h(label(report.batchId, 64))}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<header>
<h1>Batch ${h(report.batchId)} <span class="badge" style="background:${stateColor}">${report.state}</span></h1>
<p class="meta">${meta.join(' · ')}</p>
<p class="meta">${finished} of ${summary.tasks} tasks finished · budget: ${h(describeBudget(report))}</p>
</header>
<section class="cards">
${cards.map(([name, value, kind]) => `<div class="card${kind ? ` ${kind}` : ''}"><div class="value">${h(value)}</div><div class="name">${h(name)}</div></div>`).join('\n')}
</section>
${warningsHtml(report.warnings)}
${emailsHtml(report)}
<section>
<h2>Totals</h2>
${totalsHtml(report)}
</section>
${tenantHtml(report)}
${forecastHtml(report)}
${approvalHtml(report)}
<section>
<h2>Cost and steps per task</h2>
<figure class="chart">
${chart}
</figure>
</section>
<section>
<h2>Tasks</h2>
<table class="tasks">
<thead><tr><th class="num">#</th><th>Job</th><th>Task</th><th>Status</th><th>Stop reason</th><th class="num">Steps</th><th class="num">Tool calls</th><th class="num">Prompt tokens</th><th class="num">Completion tokens</th><th class="num">Cost (USD)</th><th>Answer</th></tr></thead>
<tbody>
${report.rows.flatMap((row) => [taskRow(row), ...calledHtmlRows(row)]).join('\n')}
</tbody>
</table>
${hasCalledRuns(report) ? `<p class="note">${h(CALLED_NOTE)}</p>` : ''}
</section>
${outputsHtml(report)}
<footer>
<p>Totals count finished tasks only (succeeded, stopped, failed); answers are cut to ${formatInt(ANSWER_MAX_CHARS)} characters, the full text is in agent_runs.</p>
<p>Summary:</p>
<pre>${h(JSON.stringify(summary))}</pre>
</footer>
</main>
</body>
</html>
`;
}

function totalsHtml(report: BatchReport): string {
  const { summary } = report;
  const rows: [string, string][] = [
    ...reportTotals(report).map(([name, value]): [string, string] => [name, formatInt(value)]),
    ['Cost (USD)', formatUsd(summary.usage.costUsd)],
  ];
  const body = rows.map(([name, value]) => `<tr><th>${h(name)}</th><td class="num">${h(value)}</td></tr>`);
  return `<table class="totals">\n${body.join('\n')}\n</table>`;
}

function taskRow(row: TaskReportRow): string {
  const none = '<span class="none">—</span>';
  const num = (value: number | null) => (value === null ? none : h(formatInt(value)));
  const color = STATUS_COLORS[row.status];
  const task =
    row.task === null
      ? none
      : `<span title="${h(truncate(row.task, 1_000))}">${h(label(row.task, TASK_CELL_CHARS))}</span>`;
  const cells = [
    `<td class="num">${row.index}</td>`,
    `<td>${h(row.jobId)}</td>`,
    `<td class="task">${task}</td>`,
    `<td><span class="badge" style="background:${color}">${row.status}</span></td>`,
    `<td>${row.stopReason === null ? none : h(row.stopReason)}</td>`,
    `<td class="num">${num(row.steps)}</td>`,
    `<td class="num">${num(row.toolCalls)}</td>`,
    `<td class="num">${num(row.promptTokens)}</td>`,
    `<td class="num">${num(row.completionTokens)}</td>`,
    `<td class="num">${row.costUsd === null ? none : h(formatUsd(row.costUsd))}</td>`,
    `<td class="answer">${answerHtml(row)}</td>`,
  ];
  return `<tr>${cells.join('')}</tr>`;
}

function answerHtml(row: TaskReportRow): string {
  const parts: string[] = [];
  if (row.error !== null) parts.push(`<div class="error">${h(label(row.error, 500))}</div>`);
  if (row.stopDetail) parts.push(`<div class="why">Why it stopped: ${h(label(row.stopDetail, 500))}</div>`);
  if (row.answer !== null) {
    const full = truncate(row.answer, ANSWER_MAX_CHARS);
    const preview = label(row.answer, ANSWER_PREVIEW_CHARS);
    parts.push(
      preview === full
        ? h(preview)
        : `<details><summary>${h(preview)}</summary><pre>${h(full)}</pre></details>`,
    );
  }
  return parts.length === 0 ? '<span class="none">—</span>' : parts.join('');
}

function outputsHtml(report: BatchReport): string {
  const outputs = outputTable(report.rows);
  if (!outputs) return '';
  const none = '<span class="none">— (no output)</span>';
  const head = outputs.columns.map((column) => `<th>${h(column)}</th>`).join('');
  const body = outputs.rows.map((row) => {
    const cells = row.cells
      ? row.cells.map((text) => `<td>${h(text)}</td>`).join('')
      : `<td colspan="${Math.max(1, outputs.columns.length)}">${none}</td>`;
    return `<tr><td class="num">${row.index}</td><td>${h(row.jobId)}</td>${cells}</tr>`;
  });
  return `<section>
<h2>Outputs</h2>
<table class="outputs">
<thead><tr><th class="num">#</th><th>Job</th>${head}</tr></thead>
<tbody>
${body.join('\n')}
</tbody>
</table>
</section>`;
}

function warningsHtml(warnings: readonly string[]): string {
  if (warnings.length === 0) return '';
  return `<section class="warnings">\n<h2>Warnings</h2>\n<ul>\n${warnings.map((w) => `<li>${h(w)}</li>`).join('\n')}\n</ul>\n</section>`;
}

function emailsHtml(report: BatchReport): string {
  if (report.emails.length === 0) return '';
  const items = report.emails.map(
    (e) =>
      `<li>task ${e.index} (${h(e.jobId)}): <strong>${h(e.state.replace('_', ' '))}</strong>, to ${h(e.recipient)} (message-id ${h(e.messageId)})${e.note === null ? '' : `: ${h(e.note)}`}</li>`,
  );
  return `<section class="warnings">\n<h2>Emails not known to be delivered</h2>\n<ul>\n${items.join('\n')}\n</ul>\n</section>`;
}
