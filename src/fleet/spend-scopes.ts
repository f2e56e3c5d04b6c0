// What a budget of the spend ledger covers (its scope), as the ledger's keys and tickets name it:
//   day:<YYYY-MM-DD>                  the fleet's UTC day
//   batch:<id>                        a batch
//   tenant-day:<YYYY-MM-DD>:<tenant>  one tenant's UTC day
//   hold:<id>                         what a parent set aside for a child agent (child-holds.ts): the child's
//                                     calls book in it alone, the hold itself counting in the parent's scopes
import { TENANT_NAME } from '../queue/tenant-name.js';

const SCOPE =
  /^(day:\d{4}-\d{2}-\d{2}|batch:[^\p{Cc}]{1,256}|tenant-day:\d{4}-\d{2}-\d{2}:[A-Za-z0-9_.@-]{1,64}|hold:[0-9a-f-]{36})$/u;

/** The scope of a UTC day: `day:YYYY-MM-DD`. */
export function dayScope(at: number | Date): string {
  return `day:${new Date(at).toISOString().slice(0, 10)}`;
}

/** The scope of a batch: `batch:<id>` (1 to 256 characters, no control characters). */
export function batchScope(batchId: string): string {
  const scope = `batch:${batchId}`;
  assertScope(scope);
  return scope;
}

/** The scope of one tenant's UTC day: `tenant-day:YYYY-MM-DD:<tenant>`. */
export function tenantDayScope(tenant: string, at: number | Date): string {
  if (!TENANT_NAME.test(tenant)) throw new RangeError(`bad tenant ${JSON.stringify(tenant)}`);
  return `tenant-day:${new Date(at).toISOString().slice(0, 10)}:${tenant}`;
}

/** The scope of a hold (its ticket's id): what a child agent's calls book in. */
export function holdScope(id: string): string {
  const scope = `hold:${id}`;
  assertScope(scope);
  return scope;
}

export function isScope(scope: string): boolean {
  return SCOPE.test(scope);
}

export function assertScope(scope: string): void {
  if (!isScope(scope)) throw new RangeError(`bad spend scope ${JSON.stringify(scope)}`);
}
