// BOARD_APPROVERS=alice:…,bob:…: the logins that may decide approvals in the run console (docs/console.md). A
// decision is recorded as `console:<name>`, so the name says who decided. No message here shows a password: a
// malformed item is named by its position, never by its text (it may be a password typed where a name goes).
import { namedSecretsSchema } from './named-secrets.js';

export interface BoardApprover {
  /** Letters, digits and `_.-`, at most 64: recorded in `decidedBy` as `console:<name>`. */
  user: string;
  password: string;
}

export const MIN_APPROVER_PASSWORD_CHARS = 12;

/** `name:password` items separated by commas; the password is everything after the first colon. */
export const boardApproversSchema = namedSecretsSchema('password', MIN_APPROVER_PASSWORD_CHARS).transform(
  (items) => items.map(({ name, secret }): BoardApprover => ({ user: name, password: secret })),
);
