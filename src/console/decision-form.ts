// A decision as the console's forms post it (application/x-www-form-urlencoded): approve or reject, a reason,
// and with an approval the textarea of arguments, changed or not (src/console/argument-edit.ts). Who decides is
// not a field: it comes from the login. What the desk then refuses (an edit against the tool's schema) comes
// back the same way, as issues naming their field.
import type { Approval } from '../approvals/approval.js';
import type { DecisionInput } from '../approvals/approval-desk.js';
import { readEdit } from './argument-edit.js';

export interface DecisionIssue {
  path: string;
  message: string;
}

export type ParsedDecision =
  { ok: true; input: Omit<DecisionInput, 'by'> } | { ok: false; issues: DecisionIssue[] };

/** What the approver typed, to show the form again with it when a decision is refused. */
export interface DecisionDraft {
  decision?: string;
  reason?: string;
  arguments?: string;
}

export function draftOf(body: Record<string, unknown>): DecisionDraft {
  const text = (name: string) => (typeof body[name] === 'string' ? body[name] : undefined);
  return { decision: text('decision'), reason: text('reason'), arguments: text('arguments') };
}

export function parseDecisionForm(body: Record<string, unknown>, approval: Approval): ParsedDecision {
  const issues: DecisionIssue[] = [];
  const field = (name: string): string | undefined => {
    const value = body[name];
    if (value === undefined || typeof value === 'string') return value;
    issues.push({ path: name, message: 'must be given once' });
    return undefined;
  };
  const decision = field('decision');
  if (decision !== 'approve' && decision !== 'reject') {
    if (!issues.length) issues.push({ path: 'decision', message: 'must be approve or reject' });
    return { ok: false, issues };
  }
  // Its bound is the desk's (decision-check.ts), which names the field the same way.
  const reason = field('reason')?.trim() || undefined;
  const text = field('arguments');
  let edited: Record<string, unknown> | undefined;
  if (text !== undefined && text.trim() !== '') {
    if (decision === 'reject') {
      issues.push({ path: 'arguments', message: 'only an approval takes edited arguments' });
    } else {
      const check = readEdit(text, approval.arguments);
      if (check.kind === 'invalid') issues.push({ path: check.path, message: check.message });
      if (check.kind === 'edited') edited = check.arguments;
    }
  }
  if (issues.length) return { ok: false, issues };
  return {
    ok: true,
    input: {
      decision,
      ...(reason === undefined ? {} : { reason }),
      ...(edited === undefined ? {} : { arguments: edited }),
    },
  };
}
