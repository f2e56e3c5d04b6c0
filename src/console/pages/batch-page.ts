// A batch's page: the batch report's figures and chart (src/reports: the same report `npm run report` makes,
// built from the same rows, its SVG chart embedded as it renders it) and a link per task to its run.
import { scrubText } from '../../logging/redact.js';
import type { BatchReport, TaskReportRow } from '../../reports/batch-summary.js';
import { renderBatchChart } from '../../reports/render-chart.js';
import { approvalCounts } from '../../reports/approvals-section.js';
import { describeBudget, formatInt, formatTime, formatUsd, label } from '../../reports/text.js';
import { badge, cards, h, href, NONE, page, type Nav } from './layout.js';

function taskRow(row: TaskReportRow): string {
  const num = (value: number | null) => (value === null ? NONE : h(formatInt(value)));
  // Masked as on the run's page: a task's words may hold a credential.
  const task = row.task === null ? NONE : h(label(scrubText(row.task), 120));
  return `<tr>
<td class="num">${row.index}</td>
<td><a href="${href('runs', row.jobId)}">${h(row.jobId)}</a></td>
<td><a href="${href('runs', row.jobId)}">${task}</a></td>
<td>${badge(row.status)}</td>
<td>${row.stopReason === null ? NONE : h(row.stopReason)}</td>
<td class="num">${num(row.steps)}</td>
<td class="num">${num(row.totalTokens)}</td>
<td class="num">${row.costUsd === null ? NONE : h(formatUsd(row.costUsd))}</td>
<td>${row.error === null ? '' : `<span class="error">${h(label(row.error, 160))}</span>`}${row.stopDetail ? `<span class="why">${h(label(row.stopDetail, 300))}</span>` : ''}</td>
</tr>`;
}

/** A line per tenant, when the batch's tasks have tenants: each links to its runs of the batch. */
function tenantsTable(report: BatchReport): string {
  if (report.tenants.length === 0) return '';
  const rows = report.tenants.map((line) => {
    const name =
      line.tenant === null
        ? '<span class="none">(no tenant)</span>'
        : `<a href="${h(`/console/runs?batch=${encodeURIComponent(report.batchId)}&tenant=${encodeURIComponent(line.tenant)}`)}">${h(line.tenant)}</a>`;
    const running = line.running > 0 ? ` (+${formatInt(line.running)} running)` : '';
    return `<tr><td>${name}</td><td class="num">${h(formatInt(line.tasks) + running)}</td><td class="num">${h(formatInt(line.usage.totalTokens))}</td><td class="num">${h(formatUsd(line.usage.costUsd))}</td></tr>`;
  });
  return `<h2>Tenants</h2>
<table class="tenants">
<thead><tr><th>Tenant</th><th class="num">Tasks</th><th class="num">Tokens</th><th class="num">Cost</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
}

/** The batch report's approval counts; with the approvals pages, each state links to the batch's calls in it. */
function approvalsLine(report: BatchReport, nav: Nav | undefined): string {
  const { approvals } = report;
  if (approvals.total === 0) return '';
  if (nav?.approvals === undefined) return `<p class="meta">Approvals: ${h(approvalCounts(approvals))}</p>`;
  const links = (['pending', 'approved', 'rejected', 'expired'] as const).map((state) => {
    const query = new URLSearchParams({ state, batchId: report.batchId }).toString();
    return `<a href="${h(`/console/approvals?${query}`)}">${h(`${approvals.counts[state]} ${state}`)}</a>`;
  });
  const calls = `${formatInt(approvals.total)} call${approvals.total === 1 ? '' : 's'}`;
  return `<p class="meta">Approvals: ${h(calls)} waited for a decision: ${links.join(', ')}</p>`;
}

export function batchPage(report: BatchReport, nav?: Nav): string {
  const { summary } = report;
  const figures: [string, string][] = [
    ['Cost (USD)', formatUsd(summary.usage.costUsd)],
    ['Total tokens', formatInt(summary.usage.totalTokens)],
    ['Tasks', formatInt(summary.tasks)],
    ['Succeeded', formatInt(summary.succeeded)],
    ['Stopped', formatInt(summary.stopped)],
    ['Failed', formatInt(summary.failed)],
  ];
  if (report.running > 0) figures.push(['Running', formatInt(report.running)]);
  if (report.pending > 0) figures.push(['Pending', formatInt(report.pending)]);
  const warnings =
    report.warnings.length === 0
      ? ''
      : `<ul class="problem">${report.warnings.map((warning) => `<li>${h(warning)}</li>`).join('')}</ul>`;
  const body = `<h1>Batch ${h(report.batchId)} <span class="badge ${report.state === 'completed' ? 'succeeded' : 'running'}">${h(report.state)}</span></h1>
<p class="meta">${report.name === null ? '' : `${h(label(report.name, 200))} · `}created ${h(formatTime(report.createdAt))}${report.completedAt ? ` · completed ${h(formatTime(report.completedAt))}` : ''} · budget: ${h(describeBudget(report))} · <a href="${h(`/console/runs?batch=${encodeURIComponent(report.batchId)}`)}">its runs in the list</a></p>
${cards(figures)}
${warnings}
${approvalsLine(report, nav)}
${tenantsTable(report)}
<h2>Cost and steps per task</h2>
<figure class="chart">
${renderBatchChart(report).trim()}
</figure>
<h2>Tasks</h2>
<table class="runs">
<thead><tr><th class="num">#</th><th>Job</th><th>Task</th><th>Status</th><th>Stop reason</th><th class="num">Steps</th><th class="num">Tokens</th><th class="num">Cost</th><th>Error, or why it stopped</th></tr></thead>
<tbody>
${report.rows.map(taskRow).join('\n')}
</tbody>
</table>`;
  return page(`Batch ${report.batchId}`, body, nav);
}
