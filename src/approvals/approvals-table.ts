// Approvals as `npm run approvals` prints them: a table for a list, one line for a decision. Arguments, reasons and
// names come from a model and from people: every cell is made terminal-safe and cut to one line.
import { label, terminalSafe } from '../reports/text.js';
import type { Approval } from './approval.js';

const ARGUMENTS_WIDTH = 60;
const CELL_WIDTH = 40;

/** `2026-03-01 09:30:00Z`: to the second, which is what a person reads. */
const shortTime = (iso: string | null): string =>
  iso === null ? '-' : `${iso.slice(0, 19).replace('T', ' ')}Z`;

function cells(approval: Approval): string[] {
  const decided =
    approval.state === 'pending' ? `expires ${shortTime(approval.expiresAt)}` : shortTime(approval.decidedAt);
  return [
    approval.id,
    approval.state,
    label(terminalSafe(approval.tool), CELL_WIDTH),
    label(terminalSafe(approval.jobId), CELL_WIDTH),
    String(approval.step),
    shortTime(approval.requestedAt),
    decided,
    label(terminalSafe(approval.decidedBy ?? '-'), CELL_WIDTH),
    label(
      terminalSafe(JSON.stringify(approval.editedArguments ?? approval.arguments) ?? 'null'),
      ARGUMENTS_WIDTH,
    ),
  ];
}

const HEADER = ['ID', 'STATE', 'TOOL', 'JOB', 'STEP', 'REQUESTED', 'DECIDED', 'BY', 'ARGUMENTS'];

export function renderApprovalTable(approvals: readonly Approval[]): string {
  if (approvals.length === 0) return 'no approvals\n';
  const rows = [HEADER, ...approvals.map(cells)];
  const widths = HEADER.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** `approved apr_… (send_email, job 42, step 2) by shell:ada at …: reason` */
export function describeDecision(approval: Approval): string {
  const what = `${approval.id} (${approval.tool}, job ${approval.jobId}, step ${approval.step})`;
  if (approval.state === 'pending') return terminalSafe(`${what} is pending until ${approval.expiresAt}`);
  const by = approval.decidedBy === null ? '' : ` by ${approval.decidedBy}`;
  const reason = approval.reason ? `: ${approval.reason}` : '';
  const edited = approval.editedArguments === null ? '' : ' with edited arguments';
  return terminalSafe(`${approval.state} ${what}${edited}${by} at ${approval.decidedAt ?? '?'}${reason}`);
}
