// The report's per-tenant lines, in each rendering: for each tenant of the batch's tasks, its finished tasks,
// tokens and cost (src/reports/tenant-totals.ts). Nothing when no task of the batch has a tenant.
import type { BatchReport } from './batch-summary.js';
import type { TenantTotals } from './tenant-totals.js';
import { escapeHtml as h, formatInt, formatUsd, md, terminalSafe } from './text.js';

const NO_TENANT = '(no tenant)';
const HEADER = ['Tenant', 'Tasks', 'Prompt tokens', 'Completion tokens', 'Total tokens', 'Cost (USD)'];

const nameOf = (line: TenantTotals): string => line.tenant ?? NO_TENANT;
const tasksOf = (line: TenantTotals): string =>
  `${formatInt(line.tasks)}${line.running > 0 ? ` (+${formatInt(line.running)} running)` : ''}`;

function cells(line: TenantTotals): string[] {
  return [
    nameOf(line),
    tasksOf(line),
    formatInt(line.usage.promptTokens),
    formatInt(line.usage.completionTokens),
    formatInt(line.usage.totalTokens),
    formatUsd(line.usage.costUsd),
  ];
}

/** `Tenant:    acme: 2 tasks, 1,234 tokens, $0.0123`, one line each. */
export function tenantTextLines(report: BatchReport): string[] {
  return report.tenants.map((line, i) => {
    const head = i === 0 ? 'Tenants:   ' : '           ';
    const tasks = `${tasksOf(line)} task${line.tasks === 1 && line.running === 0 ? '' : 's'}`;
    return `${head}${terminalSafe(nameOf(line))}: ${tasks}, ${formatInt(line.usage.totalTokens)} tokens, ${formatUsd(line.usage.costUsd)}`;
  });
}

export function tenantMarkdown(report: BatchReport): string[] {
  if (report.tenants.length === 0) return [];
  return [
    '## Tenants',
    '',
    `| ${HEADER.join(' | ')} |`,
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...report.tenants.map((line) => `| ${cells(line).map(md).join(' | ')} |`),
    '',
  ];
}

export function tenantHtml(report: BatchReport): string {
  if (report.tenants.length === 0) return '';
  const head = HEADER.map((title, i) => `<th${i >= 1 ? ' class="num"' : ''}>${h(title)}</th>`).join('');
  const rows = report.tenants.map(
    (line) =>
      `<tr>${cells(line)
        .map((text, i) => `<td${i >= 1 ? ' class="num"' : ''}>${h(text)}</td>`)
        .join('')}</tr>`,
  );
  return `<section class="tenants">
<h2>Tenants</h2>
<table class="tenants">
<thead><tr>${head}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</section>`;
}
