// The console's list of runs, newest first, filtered by batch, agent, tenant, status, stop reason and start date (the
// query string of a plain GET form, so a filtered list is a link one can share).
import type { StopReason } from '../../kernel/types.js';
import { TENANT_NAME, TENANT_NAME_RULE } from '../../queue/tenant-name.js';
import { scrubText } from '../../logging/redact.js';
import { formatInt, formatTime, formatUsd, label } from '../../reports/text.js';
import type { RunRowStatus } from '../../store/rows.js';
import { RUN_LIST_LIMIT, RUN_STATUSES, STOP_REASONS, type RunFilters } from '../console-store.js';
import { formatDuration } from '../render-timeline-text.js';
import type { ConsoleRun } from '../timeline.js';
import { badge, CONSOLE_PATH, h, href, NONE, page, type Nav } from './layout.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const FILTER_TEXT_MAX = 64;

export type ParsedFilters = { ok: true; filters: RunFilters } | { ok: false; message: string };

/** The filters of a query string; a bad one is refused with a message naming its field. */
export function parseRunFilters(query: Record<string, unknown>): ParsedFilters {
  const text = (name: string): string | undefined | Error => {
    const value = query[name];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') return new Error(`${name}: must be given once`);
    if (value.length > FILTER_TEXT_MAX)
      return new Error(`${name}: must be at most ${FILTER_TEXT_MAX} characters`);
    return value;
  };
  const filters: RunFilters = {};
  for (const name of ['batch', 'agent', 'tenant', 'status', 'stop_reason', 'from', 'to'] as const) {
    const value = text(name);
    if (value instanceof Error) return { ok: false, message: value.message };
    if (value === undefined) continue;
    switch (name) {
      case 'batch':
        filters.batch = value;
        break;
      case 'agent':
        filters.agent = value;
        break;
      case 'tenant':
        if (!TENANT_NAME.test(value)) return { ok: false, message: `tenant: must be ${TENANT_NAME_RULE}` };
        filters.tenant = value;
        break;
      case 'status':
        if (!RUN_STATUSES.includes(value as RunRowStatus)) {
          return { ok: false, message: `status: must be one of ${RUN_STATUSES.join(', ')}` };
        }
        filters.status = value as RunRowStatus;
        break;
      case 'stop_reason':
        if (!STOP_REASONS.includes(value as StopReason)) {
          return { ok: false, message: `stop_reason: must be one of ${STOP_REASONS.join(', ')}` };
        }
        filters.stopReason = value as StopReason;
        break;
      case 'from':
      case 'to': {
        const day = DATE.test(value) ? new Date(`${value}T00:00:00Z`) : null;
        if (day === null || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== value) {
          return { ok: false, message: `${name}: must be a date, YYYY-MM-DD (UTC)` };
        }
        // `to` is inclusive: runs started on that day are in.
        if (name === 'from') filters.from = day;
        else filters.to = new Date(day.getTime() + 24 * 3600 * 1000);
        break;
      }
    }
  }
  return { ok: true, filters };
}

function filterForm(query: Record<string, unknown>): string {
  const value = (name: string) => (typeof query[name] === 'string' ? h(query[name]) : '');
  const select = (name: string, options: readonly string[]) => {
    const current = query[name];
    const items = ['', ...options].map(
      (option) =>
        `<option value="${h(option)}"${option === current ? ' selected' : ''}>${option === '' ? 'any' : h(option)}</option>`,
    );
    return `<select name="${name}">${items.join('')}</select>`;
  };
  return `<form class="filters" method="get" action="${CONSOLE_PATH}/runs">
<label>Batch <input name="batch" value="${value('batch')}" maxlength="${FILTER_TEXT_MAX}"></label>
<label>Agent <input name="agent" value="${value('agent')}" maxlength="${FILTER_TEXT_MAX}"></label>
<label>Tenant <input name="tenant" value="${value('tenant')}" maxlength="${FILTER_TEXT_MAX}"></label>
<label>Status ${select('status', RUN_STATUSES)}</label>
<label>Stop reason ${select('stop_reason', STOP_REASONS)}</label>
<label>Started from <input type="date" name="from" value="${value('from')}"></label>
<label>to <input type="date" name="to" value="${value('to')}"></label>
<button type="submit">Filter</button> <a href="${CONSOLE_PATH}/runs">clear</a>
</form>`;
}

function runRow(run: ConsoleRun): string {
  const duration = run.finishedAt
    ? formatDuration(run.finishedAt.getTime() - run.startedAt.getTime())
    : 'running';
  const cached =
    run.cachedPromptTokens > 0
      ? `<br><span class="none">${h(formatInt(run.cachedPromptTokens))} cached</span>`
      : '';
  const batch =
    run.batchId === null ? NONE : `<a href="${href('batches', run.batchId)}">${h(run.batchId)}</a>`;
  return `<tr>
<td><a href="${href('runs', run.jobId)}">${h(run.jobId)}</a></td>
<td>${h(run.agent ?? 'default')}</td>
<td><a href="${href('runs', run.jobId)}">${h(label(scrubText(run.task), 90))}</a></td>
<td>${run.tenant ? h(run.tenant) : NONE}</td>
<td>${badge(run.status)}</td>
<td>${run.stopReason === null ? NONE : h(run.stopReason)}</td>
<td class="num">${run.steps}</td>
<td class="num">${h(formatInt(run.totalTokens))}${cached}</td>
<td class="num">${h(formatUsd(run.costUsd))}</td>
<td class="num">${h(duration)}</td>
<td>${h(formatTime(run.startedAt))}</td>
<td>${batch}</td>
</tr>`;
}

export function runsPage(
  runs: readonly ConsoleRun[],
  query: Record<string, unknown>,
  problem?: string,
  nav?: Nav,
): string {
  const rows = runs.map(runRow).join('\n');
  const count =
    runs.length >= RUN_LIST_LIMIT
      ? `the newest ${RUN_LIST_LIMIT} runs`
      : `${runs.length} run${runs.length === 1 ? '' : 's'}`;
  const body = `<h1>Runs</h1>
${filterForm(query)}
${problem ? `<p class="problem">${h(problem)}</p>` : `<p class="meta">${count}, newest first</p>`}
<table class="runs">
<thead><tr><th>Job</th><th>Agent</th><th>Task</th><th>Tenant</th><th>Status</th><th>Stop reason</th><th class="num">Steps</th><th class="num">Tokens</th><th class="num">Cost</th><th class="num">Duration</th><th>Started (UTC)</th><th>Batch</th></tr></thead>
<tbody>
${rows || `<tr><td colspan="12" class="none">no run matches</td></tr>`}
</tbody>
</table>`;
  return page('Runs', body, nav);
}
