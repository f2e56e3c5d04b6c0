// One approval as the console shows it: the call (tool, arguments), its run and batch, when it was asked and
// until when, its state and, once decided, who decided, when, why and what the arguments were changed to. With
// `forms`, the Approve and Reject forms. The arguments are the model's output, so hostile: masked, escaped,
// bounded. The forms are plain HTML (the console runs no script) posting to the board's own origin.
import type { Approval } from '../../approvals/approval.js';
import { scrubText } from '../../logging/redact.js';
import { formatInt, formatTime, truncate } from '../../reports/text.js';
import { shownArguments } from '../argument-edit.js';
import { REASON_MAX_CHARS } from '../../approvals/decision-check.js';
import type { DecisionDraft } from '../decision-form.js';
import { badge, h, href } from './layout.js';

/** Arguments shown at most this long (in characters of their JSON); the rest is said to be cut. */
export const ARGUMENTS_SHOWN_MAX = 8_000;
/** Longer arguments are not offered for editing here (the API takes them). */
export const ARGUMENTS_EDIT_MAX = 20_000;

export interface CardForms {
  /** The list's query string, carried back by the forms. */
  back: string;
  /** What the approver sent when it was refused, to correct rather than type again. */
  draft?: DecisionDraft;
}

const json = (value: unknown): string => JSON.stringify(value, null, 2) ?? 'null';

const time = (iso: string): string => h(formatTime(new Date(iso)));

function argumentsBlock(value: unknown, cssClass: string): string {
  const text = json(shownArguments(value));
  const shown = truncate(text, ARGUMENTS_SHOWN_MAX);
  const cut =
    shown === text
      ? ''
      : `<div class="meta">cut: ${h(formatInt(text.length))} characters in all (the API shows them whole)</div>`;
  return `<pre class="${cssClass}">${h(shown)}</pre>${cut}`;
}

function decisionBlock(approval: Approval): string {
  if (approval.state === 'pending') {
    return `<p class="awaiting">awaiting approval</p>`;
  }
  const by = approval.decidedBy === null ? '' : ` by <strong class="by">${h(approval.decidedBy)}</strong>`;
  const at = approval.decidedAt === null ? '' : ` at ${time(approval.decidedAt)}`;
  const reason =
    approval.reason === null ? '' : ` · reason: <span class="reason">${h(scrubText(approval.reason))}</span>`;
  const edited =
    approval.editedArguments === null || approval.editedArguments === undefined
      ? ''
      : `<div class="label">Approved with the arguments changed to</div>${argumentsBlock(approval.editedArguments, 'edited')}`;
  return `<p class="decision">${h(approval.state)}${by}${at}${reason}</p>${edited}`;
}

function formsBlock(approval: Approval, forms: CardForms): string {
  const action = href('approvals', approval.id);
  const back = `<input type="hidden" name="back" value="${h(forms.back)}">`;
  const draft = forms.draft ?? {};
  const reasonOf = (decision: string) => (draft.decision === decision ? h(draft.reason ?? '') : '');
  const shown = json(shownArguments(approval.arguments));
  const editing = draft.decision === 'approve' && draft.arguments !== undefined;
  const edit =
    shown.length > ARGUMENTS_EDIT_MAX
      ? `<p class="meta">The arguments are too long to edit here.</p>`
      : `<details${editing ? ' open' : ''}><summary>Edit the arguments</summary>
<label>Run with these arguments (JSON; left as shown, the call runs as asked)
<textarea name="arguments" rows="${Math.min(20, shown.split('\n').length + 1)}" spellcheck="false">${h(editing ? (draft.arguments ?? '') : shown)}</textarea></label>
</details>`;
  return `<div class="decide">
<form method="post" action="${action}" class="approve">${back}<input type="hidden" name="decision" value="approve">
<label>Reason (optional) <input name="reason" maxlength="${REASON_MAX_CHARS}" value="${reasonOf('approve')}"></label>
${edit}
<button type="submit">Approve</button>
</form>
<form method="post" action="${action}" class="reject">${back}<input type="hidden" name="decision" value="reject">
<label>Reason (the model is told it) <input name="reason" maxlength="${REASON_MAX_CHARS}" value="${reasonOf('reject')}"></label>
<button type="submit">Reject</button>
</form>
</div>`;
}

export function approvalCard(approval: Approval, forms?: CardForms): string {
  const batch =
    approval.batchId === null
      ? ''
      : ` · batch <a href="${href('batches', approval.batchId)}">${h(approval.batchId)}</a>`;
  const who = [
    approval.agent === null ? '' : ` · agent ${h(approval.agent)}`,
    approval.tenant === null ? '' : ` · tenant ${h(approval.tenant)}`,
  ].join('');
  const offered = forms !== undefined && approval.state === 'pending' ? formsBlock(approval, forms) : '';
  return `<article class="approval ${h(approval.state)}" id="${h(approval.id)}" data-tool="${h(approval.tool)}">
<div class="entry-head"><span class="tool">${h(approval.tool)}</span> ${badge(approval.state)} <a class="id" href="#${h(approval.id)}">${h(approval.id)}</a></div>
<div class="facts">run <a class="run" href="${href('runs', approval.jobId)}">${h(approval.jobId)}</a> · step ${approval.step}${batch}${who} · asked ${time(approval.requestedAt)} · expires ${time(approval.expiresAt)}</div>
<div class="label">Arguments (as the tool would receive them)</div>
${argumentsBlock(approval.arguments, 'arguments')}
${decisionBlock(approval)}
${offered}
</article>`;
}
