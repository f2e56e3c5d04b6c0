// The batch report's per-tenant totals: the finished tasks of each tenant (the task's `tenant`, kept with its
// run), with their tokens and cost, summed by the batch tally so each line is exact and the lines add up to the
// summary. Tasks without a tenant make a line of their own, and only batches with some tenant get the lines.
import { BatchTally, type TaskUsage } from '../batch/batch-summary.js';
import type { Usage } from '../kernel/budget.js';
import type { RunStatus } from '../kernel/types.js';

export interface TenantTotals {
  /** Null: the tasks that name no tenant. */
  tenant: string | null;
  /** Finished tasks of the tenant: those the usage is summed over. */
  tasks: number;
  /** Its tasks still running (in no sum yet). */
  running: number;
  usage: Usage;
}

/** What the totals read of a task's run. */
export interface TenantRun extends TaskUsage {
  tenant?: string | null;
  status: RunStatus | 'running';
}

/** One line per tenant, by name (tasks without a tenant last); none when no run has a tenant. */
export function tenantTotals(runs: readonly TenantRun[]): TenantTotals[] {
  if (!runs.some((run) => run.tenant)) return [];
  const groups = new Map<string | null, { tally: BatchTally; tasks: number; running: number }>();
  for (const run of runs) {
    const tenant = run.tenant || null;
    let group = groups.get(tenant);
    if (!group) {
      group = { tally: new BatchTally(), tasks: 0, running: 0 };
      groups.set(tenant, group);
    }
    if (run.status === 'running') {
      group.running++;
      continue;
    }
    group.tasks++;
    group.tally.add(run.status, run);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a === null ? 1 : b === null ? -1 : a < b ? -1 : a > b ? 1 : 0))
    .map(([tenant, group]) => ({
      tenant,
      tasks: group.tasks,
      running: group.running,
      usage: group.tally.summary('', group.tasks).usage,
    }));
}
