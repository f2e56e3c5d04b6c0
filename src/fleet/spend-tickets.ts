// A spend ticket names its reservation (a random id, unique across processes) and the scopes it was booked in,
// so any process can settle it without another lookup.
import { isScope } from './spend-scopes.js';

export interface DecodedTicket {
  id: string;
  scopes: string[];
}

export function encodeTicket(ticket: DecodedTicket): string {
  return `v1.${ticket.id}.${Buffer.from(JSON.stringify(ticket.scopes)).toString('base64url')}`;
}

export function decodeTicket(ticket: string): DecodedTicket {
  const match = /^v1\.([0-9a-f-]{36})\.([A-Za-z0-9_-]+)$/.exec(ticket);
  let scopes: unknown;
  try {
    scopes = match ? JSON.parse(Buffer.from(match[2] ?? '', 'base64url').toString('utf8')) : undefined;
  } catch {
    scopes = undefined;
  }
  if (
    !match ||
    !Array.isArray(scopes) ||
    scopes.length === 0 ||
    !scopes.every((s): s is string => typeof s === 'string' && isScope(s))
  ) {
    throw new RangeError(`not a spend ticket: ${JSON.stringify(ticket)}`);
  }
  return { id: match[1] ?? '', scopes };
}

/** Whether two tickets were booked over the same scopes, in the same order. */
export function sameScopes(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((scope, i) => scope === b[i]);
}
