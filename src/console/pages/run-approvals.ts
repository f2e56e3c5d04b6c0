// The approvals of one run, on its page: which calls waited for a person and what was decided. A pending one
// is marked "awaiting approval" and links to the approvals list, where an approver decides it.
import type { Approval } from '../../approvals/approval.js';
import { scrubText } from '../../logging/redact.js';
import { formatTime, label } from '../../reports/text.js';
import { approvalQueryString } from '../approval-query.js';
import { badge, CONSOLE_PATH, h } from './layout.js';

function row(approval: Approval): string {
  const decide = h(
    `${CONSOLE_PATH}/approvals?${approvalQueryString({ state: 'pending', jobId: approval.jobId })}#${approval.id}`,
  );
  const all = h(
    `${CONSOLE_PATH}/approvals?${approvalQueryString({ state: 'all', jobId: approval.jobId })}#${approval.id}`,
  );
  const outcome =
    approval.state === 'pending'
      ? `<span class="awaiting">awaiting approval</span> · <a href="${decide}">decide</a>`
      : [
          badge(approval.state),
          approval.decidedBy === null ? '' : ` by ${h(approval.decidedBy)}`,
          approval.decidedAt === null ? '' : ` at ${h(formatTime(new Date(approval.decidedAt)))}`,
          approval.reason === null ? '' : ` · ${h(label(scrubText(approval.reason), 120))}`,
          approval.editedArguments === null ? '' : ' · arguments edited',
        ].join('');
  return `<tr data-approval="${h(approval.id)}">
<td class="num">${approval.step}</td>
<td>${h(approval.tool)}</td>
<td>${outcome}</td>
<td>${h(formatTime(new Date(approval.requestedAt)))}</td>
<td><a href="${all}">details</a></td>
</tr>`;
}

/** In the order the run asked, as its timeline reads (the desk lists newest first). */
const asked = (a: Approval, b: Approval): number =>
  a.step - b.step || a.requestedAt.localeCompare(b.requestedAt) || a.callKey.localeCompare(b.callKey);

/** The section, or nothing for a run that asked for no approval. */
export function runApprovalsSection(approvals: readonly Approval[] | undefined): string {
  if (!approvals?.length) return '';
  return `<h2>Approvals</h2>
<table class="runs approvals">
<thead><tr><th class="num">Step</th><th>Tool</th><th>Decision</th><th>Asked (UTC)</th><th></th></tr></thead>
<tbody>
${[...approvals].sort(asked).map(row).join('\n')}
</tbody>
</table>`;
}
