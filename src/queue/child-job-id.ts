// The job id of the child agent a call starts (docs/child-agents.md): one per call key, so a parent resumed after
// a crash never starts a second child for the same call. Its own module: the worker adds the job under it, the
// trace command finds the run a call started by it.
import { createHash } from 'node:crypto';

/** Never an integer (BullMQ refuses those). */
export function childJobId(callKey: string): string {
  return `child-${createHash('sha256').update(callKey).digest('hex').slice(0, 32)}`;
}
