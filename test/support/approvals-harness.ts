// The deciding side of approvals for fleet tests: the product's own desk (the one the API, the CLI and the console
// use) over a test file's store and queues, and a wait for a number of approvals in a state.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Approval } from '../../src/approvals/approval.js';
import { ApprovalDesk, type ApprovalFilter } from '../../src/approvals/approval-desk.js';
import { ApprovalEvents } from '../../src/approvals/approval-events.js';
import { ApprovalStore } from '../../src/approvals/approval-store.js';
import { wakeParkedJob } from '../../src/approvals/wake-parked-job.js';
import { EVENTS_QUEUE, TASKS_QUEUE } from '../../src/queue/names.js';
import { createStorePool } from '../../src/store/pool.js';
import { REDIS_URL, type FleetNamespace } from './fleet-harness.js';

export interface ApprovalsHarness {
  desk: ApprovalDesk;
  store: ApprovalStore;
  tasks: Queue;
  events: Queue;
  /** Polls until at least `count` approvals match `filter`; answers them. */
  waitFor(filter: ApprovalFilter, count: number, timeoutMs?: number): Promise<Approval[]>;
  close(): Promise<void>;
}

/** The store's own pool (as the API's); the table is the workers' to create (they migrate on start). */
export async function openApprovals(ns: FleetNamespace): Promise<ApprovalsHarness> {
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 4 });
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const tasks = new Queue(TASKS_QUEUE, { connection, prefix: ns.prefix });
  const events = new Queue(EVENTS_QUEUE, { connection, prefix: ns.prefix });
  const store = new ApprovalStore(pool);
  const desk = new ApprovalDesk({
    store,
    wake: (jobId) => wakeParkedJob(tasks, jobId),
    events: new ApprovalEvents(events),
  });
  return {
    desk,
    store,
    tasks,
    events,
    async waitFor(filter, count, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = await desk.list({ ...filter, limit: 1_000 });
        if (found.length >= count) return found;
        if (Date.now() > deadline) {
          throw new Error(
            `${found.length} of ${count} approvals ${JSON.stringify(filter)} after ${timeoutMs} ms`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      await tasks.close();
      await events.close();
      connection.disconnect();
      await pool.end();
    },
  };
}
