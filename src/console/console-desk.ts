// What the run console needs of the approval desk (src/approvals/approval-desk.ts), the one path by which the
// API, the CLI and the console decide: the console lists and decides through it, with no SQL of its own, so
// an edit is checked, a parked job woken and the decision published the same way whoever decides. The board
// gives it producers/store-approval-desk.ts, whose pool is made on first use (a store that is down when the
// board starts costs the approvals pages only, as it does the console's).
import type { ApprovalDesk } from '../approvals/approval-desk.js';

export type ConsoleDesk = Pick<ApprovalDesk, 'list' | 'get' | 'decide'>;
