// The report's approvals, in each rendering: the counts by state, then a table of the calls (approval-totals.ts).
// Tool names come from a model, deciders' names and reasons from people: every cell is one line, cut, and escaped
// for its output (HTML, Markdown, terminal). Nothing when no call of the batch waited for a decision.
import type { ApprovalReportRow, ApprovalsReport } from './approval-totals.js';
import type { BatchReport } from './batch-summary.js';
import { escapeHtml as h, formatInt, formatTime, label, md, terminalSafe } from './text.js';

const HEADER = ['#', 'Job', 'Tool', 'State', 'Requested', 'Decided by', 'Decided', 'Reason', 'Edited'];
const NAME_CHARS = 64;
const REASON_CHARS = 200;
const DASH = '—';

/** `4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired` */
export function approvalCounts(approvals: ApprovalsReport): string {
  const { counts, total } = approvals;
  const states = `${counts.pending} pending, ${counts.approved} approved, ${counts.rejected} rejected, ${counts.expired} expired`;
  return `${formatInt(total)} call${total === 1 ? '' : 's'} waited for a decision: ${states}`;
}

/** Plain cells, not yet escaped or cut: each rendering does both for its output. */
function cells(row: ApprovalReportRow): string[] {
  return [
    row.index === null ? DASH : String(row.index),
    row.jobId,
    row.tool,
    row.state,
    formatTime(row.requestedAt),
    row.decidedBy ?? DASH,
    row.decidedAt === null ? DASH : formatTime(row.decidedAt),
    row.reason ?? '',
    row.edited ? 'edited' : row.state === 'approved' ? 'as asked' : '',
  ];
}

/** Cut to its column's width, on one line: names and ids short, a reason longer. */
function cut(text: string, column: number): string {
  return label(text, HEADER[column] === 'Reason' ? REASON_CHARS : NAME_CHARS);
}

const omittedNote = (approvals: ApprovalsReport): string =>
  `${formatInt(approvals.omitted)} more not listed here: npm run approvals -- list --batch ID`;

export function approvalTextLines(report: BatchReport): string[] {
  const { approvals } = report;
  if (approvals.total === 0) return [];
  const lines = [`Approvals: ${approvalCounts(approvals)}`];
  for (const row of approvals.rows) {
    const task = row.index === null ? 'no task' : `task ${row.index}`;
    const by = row.decidedBy === null ? '' : ` by ${cell(row.decidedBy, NAME_CHARS)}`;
    const when =
      row.decidedAt === null ? ` since ${formatTime(row.requestedAt)}` : ` at ${formatTime(row.decidedAt)}`;
    const edited = row.edited ? ', arguments edited' : '';
    const reason = row.reason ? `: ${cell(row.reason, REASON_CHARS)}` : '';
    lines.push(
      `           ${task} (${cell(row.jobId, 24)}) ${cell(row.tool, NAME_CHARS)}: ${row.state}${by}${when}${edited}${reason}`,
    );
  }
  if (approvals.omitted > 0) lines.push(`           ${omittedNote(approvals)}`);
  return lines;
}

export function approvalMarkdown(report: BatchReport): string[] {
  const { approvals } = report;
  if (approvals.total === 0) return [];
  const out = [
    '## Approvals',
    '',
    `${approvalCounts(approvals)}.`,
    '',
    `| ${HEADER.join(' | ')} |`,
    '| ---: | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...approvals.rows.map(
      (row) =>
        `| ${cells(row)
          .map((text, i) => md(cut(text, i)))
          .join(' | ')} |`,
    ),
    '',
  ];
  if (approvals.omitted > 0) out.push(`${md(omittedNote(approvals))}.`, '');
  return out;
}

export function approvalHtml(report: BatchReport): string {
  const { approvals } = report;
  if (approvals.total === 0) return '';
  const head = HEADER.map((title, i) => `<th${i === 0 ? ' class="num"' : ''}>${h(title)}</th>`).join('');
  const rows = approvals.rows.map((row) => {
    return `<tr>${cells(row)
      .map((text, i) => {
        const shown = cut(text, i);
        // A cut reason keeps more of itself in the title (escaped as any attribute value is).
        const title = shown === text ? '' : ` title="${h(label(text, 1_000))}"`;
        return `<td${i === 0 ? ' class="num"' : ''}${title}>${h(shown)}</td>`;
      })
      .join('')}</tr>`;
  });
  const omitted = approvals.omitted > 0 ? `\n<p class="meta">${h(omittedNote(approvals))}</p>` : '';
  return `<section class="approvals">
<h2>Approvals</h2>
<p class="meta">${h(approvalCounts(approvals))}</p>
<table class="approvals">
<thead><tr>${head}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>${omitted}
</section>`;
}

function cell(text: string, max: number): string {
  return label(terminalSafe(text), max);
}
