// The navigation bar's approvals link and how many approvals wait. The count is a convenience: when it cannot
// be read the link is shown without it, and the page itself says whether the store answers.
import type { ConsoleStore } from './console-store.js';
import type { Nav } from './pages/layout.js';

export async function navOf(store: ConsoleStore, withApprovals: boolean): Promise<Nav> {
  if (!withApprovals) return {};
  const pending = await store.countPendingApprovals().catch(() => null);
  return { approvals: { pending } };
}
