// What a decision posted from the console answers when it is not taken: refused (400, each issue naming its
// field, the form shown again with what was typed), or too late (409, the first decision, which stands).
import type { Approval } from '../../approvals/approval.js';
import type { DecisionDraft, DecisionIssue } from '../decision-form.js';
import { approvalCard } from './approval-card.js';
import { CONSOLE_PATH, h, page, type Nav } from './layout.js';

function backLink(back: string): string {
  return `<p><a href="${h(`${CONSOLE_PATH}/approvals${back ? `?${back}` : ''}`)}">Back to the approvals</a></p>`;
}

export function decisionRefusedPage(
  approval: Approval,
  issues: readonly DecisionIssue[],
  form: { back: string; draft: DecisionDraft },
  nav: Nav,
): string {
  const items = issues
    .map((issue) => `<li><code class="path">${h(issue.path)}</code>: ${h(issue.message)}</li>`)
    .join('\n');
  const body = `<h1>Decision refused</h1>
<div class="problem"><p>Nothing was decided:</p><ul class="issues">
${items}
</ul></div>
${approvalCard(approval, form)}
${backLink(form.back)}`;
  return page('Decision refused', body, nav);
}

export function alreadyDecidedPage(approval: Approval, back: string, nav: Nav): string {
  const body = `<h1>Already decided</h1>
<p class="problem">Approval ${h(approval.id)} was ${approval.state === 'expired' ? 'expired' : 'decided'} before: the first decision stands, and yours was not recorded.</p>
${approvalCard(approval)}
${backLink(back)}`;
  return page('Already decided', body, nav);
}
