// Who acts from a shell (a decision of `npm run approvals`, a cancel of `npm run enqueue -- --cancel`): the login
// name of the process's user, as `shell:<user>`. Kept apart so a command can say who without loading the store.
import { userInfo } from 'node:os';

export function shellCaller(): string {
  try {
    return `shell:${userInfo().username}`;
  } catch {
    // No passwd entry (a container's arbitrary uid): the uid still says who.
    return `shell:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}
