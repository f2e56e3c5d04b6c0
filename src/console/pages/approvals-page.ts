// The console's list of approvals, newest first: pending ones unless told otherwise (the list is first of all a
// work queue), by run, batch and tool. An approver is offered the Approve and Reject forms on each pending one;
// any other login sees the same list without them. After a decision it says what was decided, read back from
// the store (not from the address, which anyone could write).
import type { Approval } from '../../approvals/approval.js';
import {
  APPROVAL_LIST_LIMIT,
  APPROVAL_STATE_CHOICES,
  approvalQueryString,
  type ApprovalQuery,
} from '../approval-query.js';
import type { ConsoleLogin } from '../console-login.js';
import { approvalCard } from './approval-card.js';
import { CONSOLE_PATH, h, href, page, type Nav } from './layout.js';

export interface ApprovalsView {
  approvals: readonly Approval[];
  /** The filters, as parsed; with `problem`, the raw query is shown back instead. */
  query: ApprovalQuery;
  raw: Record<string, unknown>;
  login: ConsoleLogin | null;
  /** The approval just decided, from the redirect after a decision. */
  decided?: Approval | null;
  problem?: string;
  nav: Nav;
}

function filterForm(raw: Record<string, unknown>): string {
  const value = (name: string) => (typeof raw[name] === 'string' ? h(raw[name]) : '');
  const current = typeof raw['state'] === 'string' && raw['state'] !== '' ? raw['state'] : 'pending';
  const states = APPROVAL_STATE_CHOICES.map(
    (state) => `<option value="${state}"${state === current ? ' selected' : ''}>${state}</option>`,
  ).join('');
  return `<form class="filters" method="get" action="${CONSOLE_PATH}/approvals">
<label>State <select name="state">${states}</select></label>
<label>Run (job id) <input name="jobId" value="${value('jobId')}" maxlength="64"></label>
<label>Batch <input name="batchId" value="${value('batchId')}" maxlength="64"></label>
<label>Tool <input name="tool" value="${value('tool')}" maxlength="64"></label>
<button type="submit">Filter</button> <a href="${CONSOLE_PATH}/approvals">pending</a>
</form>`;
}

function notice(decided: Approval | null | undefined): string {
  if (!decided || decided.state === 'pending') return '';
  const by = decided.decidedBy === null ? '' : ` by ${h(decided.decidedBy)}`;
  return `<p class="notice" role="status">Approval <a href="#${h(decided.id)}">${h(decided.id)}</a> (${h(decided.tool)} on run <a href="${href('runs', decided.jobId)}">${h(decided.jobId)}</a>): ${h(decided.state)}${by}.</p>`;
}

function loginNote(login: ConsoleLogin | null): string {
  if (login?.mayDecide)
    return `<p class="meta">Signed in as ${h(login.name)}: your decisions are recorded as console:${h(login.name)}.</p>`;
  const who = login ? `Signed in as ${h(login.name)}: you` : 'You';
  return `<p class="meta">${who} can see approvals but not decide them; deciding takes an approver's login (BOARD_APPROVERS) or the admin login.</p>`;
}

export function approvalsPage(view: ApprovalsView): string {
  const { approvals, query } = view;
  const back = approvalQueryString(query);
  const forms = view.login?.mayDecide ? { back } : undefined;
  // The decided one is in the list too when the filter keeps it (state=all): shown once, in the notice's place.
  const cards = approvals.map((approval) => approvalCard(approval, forms)).join('\n');
  const count =
    approvals.length >= APPROVAL_LIST_LIMIT
      ? `the newest ${APPROVAL_LIST_LIMIT}`
      : `${approvals.length} approval${approvals.length === 1 ? '' : 's'}`;
  const what = query.state === 'all' ? '' : ` ${query.state}`;
  const body = `<h1>Approvals</h1>
${notice(view.decided)}
${filterForm(view.problem ? view.raw : { ...view.raw, state: query.state })}
${loginNote(view.login)}
${view.problem ? `<p class="problem">${h(view.problem)}</p>` : `<p class="meta">${count}${h(what)}, newest first</p>`}
<section class="approvals">
${cards || `<p class="none">no approval matches</p>`}
</section>`;
  return page('Approvals', body, view.nav);
}
