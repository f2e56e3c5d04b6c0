// The API's approval desk over MYSQL_URL. The pool is made on first use, like StoreResultArchive's, so the API
// starts and serves tasks while the store is down (the approvals routes answer 503 meanwhile); a failed attempt is
// forgotten, so the next request tries again. A decision wakes its parked job on the tasks queue and publishes
// `approval.decided` on the events queue, both queues the caller's (it owns and closes them).
import type { Queue } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import type { Approval, ApprovalState } from '../src/approvals/approval.js';
import {
  ApprovalDesk,
  type ApprovalFilter,
  type BatchDecisionInput,
  type DecisionInput,
  type DecisionOutcome,
  type DeskLogger,
} from '../src/approvals/approval-desk.js';
import { ApprovalEvents } from '../src/approvals/approval-events.js';
import { ApprovalStore } from '../src/approvals/approval-store.js';
import { wakeParkedJob } from '../src/approvals/wake-parked-job.js';
import { createStorePool } from '../src/store/pool.js';
import type { ApprovalsDesk } from './approvals-routes.js';

export interface StoreApprovalDeskOptions {
  mysqlUrl: string;
  /** agent-tasks under the fleet's prefix: where parked jobs wait. */
  tasks: Queue;
  /** agent-events under the fleet's prefix; no events without it. */
  events?: Queue;
  logger?: DeskLogger;
}

export class StoreApprovalDesk implements ApprovalsDesk {
  private pool: Promise<Pool> | undefined;
  private desk: ApprovalDesk | undefined;

  constructor(private readonly options: StoreApprovalDeskOptions) {}

  async list(filter: ApprovalFilter): Promise<Approval[]> {
    return (await this.open()).list(filter);
  }

  async get(id: string): Promise<Approval | null> {
    return (await this.open()).get(id);
  }

  async decide(id: string, input: DecisionInput): Promise<DecisionOutcome> {
    return (await this.open()).decide(id, input);
  }

  async decideBatch(input: BatchDecisionInput): Promise<{ decided: Approval[]; conflicts: number }> {
    return (await this.open()).decideBatch(input);
  }

  async countsForBatch(batchId: string): Promise<Record<ApprovalState, number>> {
    return (await this.open()).countsForBatch(batchId);
  }

  /** For /metrics (FleetMetrics.watchApprovals), over the desk's own pool: no second pool for a gauge. */
  async pendingStats(now: Date): Promise<{ count: number; oldestAgeSeconds: number }> {
    await this.open();
    const pool = await this.pool;
    if (!pool) throw new Error('the approval desk is closed');
    return new ApprovalStore(pool).pendingStats(now);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    this.desk = undefined;
    if (pool) await (await pool.catch(() => undefined))?.end();
  }

  private async open(): Promise<ApprovalDesk> {
    this.pool ??= createStorePool(this.options.mysqlUrl, { connectionLimit: 4, connectTimeout: 3_000 }).catch(
      (error: unknown) => {
        this.pool = undefined;
        throw error;
      },
    );
    const pool = await this.pool;
    const { tasks, events, logger } = this.options;
    this.desk ??= new ApprovalDesk({
      store: new ApprovalStore(pool),
      wake: (jobId) => wakeParkedJob(tasks, jobId),
      ...(events ? { events: new ApprovalEvents(events) } : {}),
      ...(logger ? { logger } : {}),
    });
    return this.desk;
  }
}
