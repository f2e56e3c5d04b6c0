// Who is looking at the console. The board's login check (producers/board-app.ts) puts it on res.locals; the
// console reads it to offer decision forms and to record who decided. Who decided is never taken from a form:
// only from the credentials the request was let in with.
import type { Response } from 'express';

export interface ConsoleLogin {
  /** The login's user name. */
  name: string;
  /** Whether it may decide approvals: an approver of BOARD_APPROVERS, or the admin login. */
  mayDecide: boolean;
}

const KEY = 'consoleLogin';

export function setConsoleLogin(res: Response, login: ConsoleLogin): void {
  res.locals[KEY] = login;
}

/** The login the request came in with, or null when nothing set one (the console then offers no decision). */
export function consoleLoginOf(res: Response): ConsoleLogin | null {
  const login: unknown = res.locals[KEY];
  return typeof login === 'object' && login !== null ? (login as ConsoleLogin) : null;
}

/** How a decision made in the console is recorded (`decidedBy`). */
export function decidedByOf(login: ConsoleLogin): string {
  return `console:${login.name}`;
}
