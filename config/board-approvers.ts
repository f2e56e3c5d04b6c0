// BOARD_APPROVERS=alice:…,bob:…: the logins that may decide approvals in the run console (docs/console.md). A
// decision is recorded as `console:<name>`, so the name says who decided. No message here shows a password: a
// malformed item is named by its position, never by its text (it may be a password typed where a name goes).
import { z } from 'zod';

export interface BoardApprover {
  /** Letters, digits and `_.-`, at most 64: recorded in `decidedBy` as `console:<name>`. */
  user: string;
  password: string;
}

export const APPROVER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const MIN_APPROVER_PASSWORD_CHARS = 12;

/** `name:password` items separated by commas; the password is everything after the first colon. */
export const boardApproversSchema = z.string().transform((value, ctx): BoardApprover[] => {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  const approvers: BoardApprover[] = [];
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  for (const [i, item] of items.entries()) {
    const at = item.indexOf(':');
    if (at < 0) return refuse(`item ${i + 1} must be name:password`);
    const user = item.slice(0, at).trim();
    const password = item.slice(at + 1).trim();
    if (!APPROVER_NAME.test(user))
      return refuse(`item ${i + 1}: the name must be 1 to 64 letters, digits and _.- (name:password)`);
    if (password.length < MIN_APPROVER_PASSWORD_CHARS)
      return refuse(`the password of "${user}" must be at least ${MIN_APPROVER_PASSWORD_CHARS} characters`);
    if (approvers.some((other) => other.user === user)) return refuse(`the name "${user}" is given twice`);
    approvers.push({ user, password });
  }
  return approvers.length > 0 ? approvers : refuse('must hold at least one name:password');
});
