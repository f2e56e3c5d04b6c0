// The approvals list's filters, from its query string (a plain GET form, so a filtered list is a link to share):
// the state, pending unless told (the list is first of all a work queue), the run, the batch, the tool. A bad
// one is refused with a message naming its field, as the runs list does. A decision form carries the list's
// query back, so the approver returns to the list they decided from.
import { APPROVAL_STATES, type ApprovalState } from '../approvals/approval.js';
import type { ApprovalFilter } from '../approvals/approval-desk.js';

export const APPROVAL_LIST_LIMIT = 200;
export const APPROVAL_STATE_CHOICES = [...APPROVAL_STATES, 'all'] as const;
/** Job and batch ids are VARCHAR(64), tool names too. */
const TEXT_MAX = 64;
const TEXT_FIELDS = ['jobId', 'batchId', 'tool'] as const;

export interface ApprovalQuery {
  state: ApprovalState | 'all';
  jobId?: string;
  batchId?: string;
  tool?: string;
}

export type ParsedApprovalQuery = { ok: true; query: ApprovalQuery } | { ok: false; message: string };

export function parseApprovalQuery(raw: Record<string, unknown>): ParsedApprovalQuery {
  const query: ApprovalQuery = { state: 'pending' };
  for (const name of ['state', ...TEXT_FIELDS] as const) {
    const value = raw[name];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string') return { ok: false, message: `${name}: must be given once` };
    if (value.length > TEXT_MAX)
      return { ok: false, message: `${name}: must be at most ${TEXT_MAX} characters` };
    if (name !== 'state') query[name] = value;
    else if ((APPROVAL_STATE_CHOICES as readonly string[]).includes(value))
      query.state = value as ApprovalQuery['state'];
    else return { ok: false, message: `state: must be one of ${APPROVAL_STATE_CHOICES.join(', ')}` };
  }
  return { ok: true, query };
}

/** What the desk is asked for: the newest APPROVAL_LIST_LIMIT matching. */
export function deskFilterOf(query: ApprovalQuery): ApprovalFilter {
  const { state, ...rest } = query;
  return { ...rest, ...(state === 'all' ? {} : { state }), limit: APPROVAL_LIST_LIMIT };
}

/** The list's query string (without `?`), the default state left out. */
export function approvalQueryString(query: ApprovalQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  if (query.state !== 'pending') params.set('state', query.state);
  for (const name of TEXT_FIELDS) {
    const value = query[name];
    if (value !== undefined) params.set(name, value);
  }
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  return params.toString();
}

/** The query a decision form carried back (`back`); anything unreadable is the default list. */
export function queryFromBack(back: unknown): ApprovalQuery {
  const fallback: ApprovalQuery = { state: 'pending' };
  if (typeof back !== 'string' || back.length > 1_000) return fallback;
  const parsed = parseApprovalQuery(Object.fromEntries(new URLSearchParams(back)));
  return parsed.ok ? parsed.query : fallback;
}
