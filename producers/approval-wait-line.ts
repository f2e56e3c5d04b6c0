// The one line `npm run enqueue -- --wait` prints when its task parks for a person's decision: which calls wait,
// their approval ids (to copy), until when, and how to decide. Printed instead of the progress line, once per park
// (the progress does not change while the job waits).
import { pendingApprovalsOf } from '../src/client/awaiting-approval.js';

/** Calls named in full; more are counted. */
const LISTED = 5;

/** The line for a parked job's progress, or null when the progress is not that of a parked job. */
export function approvalWaitLine(jobId: string, progress: unknown): string | null {
  const calls = pendingApprovalsOf(progress);
  if (calls === null) return null;
  if (calls.length === 0)
    return `job ${jobId}: waiting for approval (npm run approvals -- list --job ${jobId})`;
  const named = calls.slice(0, LISTED).map((call) => `${call.tool} (${call.id})`);
  if (calls.length > LISTED) named.push(`and ${calls.length - LISTED} more`);
  const expiries = calls
    .map((call) => call.expiresAt)
    .filter(Boolean)
    .sort();
  const until = expiries[0] ? ` until ${expiries[0]}` : '';
  return (
    `job ${jobId}: waiting for approval${until}: ${named.join(', ')}; decide with ` +
    `npm run approvals -- approve ID, or npm run approvals -- reject ID --reason "…"`
  );
}
