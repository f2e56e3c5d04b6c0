// The report's "forecast against actual" section, in each rendering: per agent and model, the worst case and the
// expected p50–p90 range the batch was enqueued with, next to what its finished tasks cost; then the total and
// where the actual cost fell. Nothing when the batch has no forecast.
import type { BatchReport } from './batch-summary.js';
import type { ForecastGroupReport, ForecastReport } from './forecast-report.js';
import { groupText, totalText } from './forecast-text.js';
import { escapeHtml as h, formatInt, formatTime, formatUsd, md, terminalSafe } from './text.js';

const HEADER = [
  'Agent',
  'Model',
  'Tasks',
  'Worst case (USD)',
  'Expected p50–p90 (USD)',
  'Runs',
  'Actual (USD)',
];

function cells(entry: ForecastGroupReport): string[] {
  const { group } = entry;
  const runs = group.history ? `${group.history.runs}${group.history.fewRuns ? ' (few)' : ''}` : '0';
  return [
    group.agent,
    group.model,
    formatInt(group.tasks),
    formatUsd(group.worstCase.costUsd),
    group.expected ? `${formatUsd(group.expected.p50Usd)}–${formatUsd(group.expected.p90Usd)}` : 'no history',
    runs,
    `${formatUsd(entry.actualUsd)} (${entry.finished} finished)`,
  ];
}

function basis(report: ForecastReport): string {
  const { forecast } = report;
  const budget = forecast.budgetFromForecast
    ? `; the batch budget was set from its ${forecast.budgetFromForecast.quantile}`
    : '';
  return `Made ${formatTime(new Date(forecast.madeAt))} from runs finished since ${formatTime(new Date(forecast.historySince))} (${forecast.method})${budget}.`;
}

export function forecastTextLines(report: BatchReport): string[] {
  const forecast = report.forecast;
  if (!forecast) return [];
  const lines = forecast.groups.map(
    (entry) =>
      `           ${terminalSafe(`${groupText(entry.group)}; actual ${formatUsd(entry.actualUsd)} (${entry.finished} finished)`)}`,
  );
  return [
    `Forecast:  ${terminalSafe(totalText(forecast.forecast))}`,
    `           ${terminalSafe(forecast.verdict)}`,
    ...lines,
  ];
}

export function forecastMarkdown(report: BatchReport): string[] {
  const forecast = report.forecast;
  if (!forecast) return [];
  return [
    '## Forecast against actual',
    '',
    md(basis(forecast)),
    '',
    `| ${HEADER.join(' | ')} |`,
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...forecast.groups.map((entry) => `| ${cells(entry).map(md).join(' | ')} |`),
    '',
    `- **Forecast:** ${md(totalText(forecast.forecast))}`,
    `- **Result:** ${md(forecast.verdict)}`,
    '',
  ];
}

export function forecastHtml(report: BatchReport): string {
  const forecast = report.forecast;
  if (!forecast) return '';
  const head = HEADER.map((title, i) => `<th${i >= 2 ? ' class="num"' : ''}>${h(title)}</th>`).join('');
  const rows = forecast.groups.map(
    (entry) =>
      `<tr>${cells(entry)
        .map((text, i) => `<td${i >= 2 ? ' class="num"' : ''}>${h(text)}</td>`)
        .join('')}</tr>`,
  );
  return `<section class="forecast">
<h2>Forecast against actual</h2>
<p class="meta">${h(basis(forecast))}</p>
<table class="forecast">
<thead><tr>${head}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
<p><strong>Forecast:</strong> ${h(totalText(forecast.forecast))}<br><strong>Result:</strong> ${h(forecast.verdict)}</p>
</section>`;
}
