// Approvals on /metrics: the pending count and the oldest wait read from a real, migrated store (a database of its
// own, af_test_apprmetrics_<random>, dropped at the end) on each scrape; a store that is slow or fails never holds
// a scrape up, keeps the last values and is counted; and the decisions resumed runs apply, by outcome.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import type { NewApproval } from '../../../src/approvals/approval.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import type { PendingApprovalsSource } from '../../../src/metrics/approval-metrics.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const DATABASE = `af_test_apprmetrics_${randomBytes(4).toString('hex')}`;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let pool: Pool;
let store: ApprovalStore;

setupOrFail(async () => {
  pool = await createStorePool(`mysql://root@127.0.0.1:3306/${DATABASE}`);
  await migrate(pool);
  store = new ApprovalStore(pool);
});

afterAll(async () => {
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

function asked(jobId: string, position: number, requestedAt: number, expiresAt: number): NewApproval {
  return {
    jobId,
    batchId: null,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: `call_${position}`,
    callKey: `${jobId}:1:${position}`,
    instance: '1',
    tool: 'send_email',
    arguments: { to: 'ada@example.com' },
    argumentsSchema: null,
    requestedAt: new Date(requestedAt),
    expiresAt: new Date(expiresAt),
  };
}

/** The value of an unlabelled sample, or undefined when the scrape has none. */
async function sample(metrics: FleetMetrics, name: string): Promise<number | undefined> {
  const line = (await metrics.metrics()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('pending approvals, read from the store on scrape', () => {
  it('counts the calls that wait, and how long the oldest has', async () => {
    const metrics = new FleetMetrics({ defaultMetrics: false });
    metrics.watchApprovals(store);
    expect(await sample(metrics, 'agentfleet_approvals_pending')).toBe(0);
    expect(await sample(metrics, 'agentfleet_approvals_oldest_pending_seconds')).toBe(0);

    const now = Date.now();
    const job = `job-${randomBytes(3).toString('hex')}`;
    await store.request([
      asked(job, 0, now - 90 * MINUTE, now + HOUR), // the oldest still waiting: 90 minutes
      asked(job, 1, now - 5 * MINUTE, now + HOUR),
      asked(job, 2, now - 1 * MINUTE, now + HOUR), // decided below: waits no more
      asked(job, 3, now - 3 * HOUR, now - HOUR), // past its expiry, not yet expired by anyone: waits no more
    ]);
    const [decided] = await store.forCalls(job, '1', [`${job}:1:2`]);
    expect(await store.decide(decided!.id, { decision: 'approve', by: 'alice' }, new Date())).toBe('decided');

    expect(await sample(metrics, 'agentfleet_approvals_pending')).toBe(2);
    const oldest = (await sample(metrics, 'agentfleet_approvals_oldest_pending_seconds'))!;
    expect(oldest).toBeGreaterThanOrEqual(90 * 60);
    expect(oldest).toBeLessThan(90 * 60 + 30);
    expect(await sample(metrics, 'agentfleet_approvals_scrape_errors_total')).toBe(0);

    // Read again on every scrape.
    await store.expireDue(new Date(now + 2 * HOUR), job);
    expect(await sample(metrics, 'agentfleet_approvals_pending')).toBe(0);
    expect(await sample(metrics, 'agentfleet_approvals_oldest_pending_seconds')).toBe(0);
  });

  it('shows no gauge in a process that watches no store', async () => {
    const text = await new FleetMetrics({ defaultMetrics: false }).metrics();
    expect(text).not.toContain('agentfleet_approvals_pending');
    expect(text).not.toContain('agentfleet_approvals_oldest_pending_seconds');
  });
});

describe('pending approvals when the store is slow or down', () => {
  it('keeps the last values, counts the miss, and never waits past its limit', async () => {
    let reads = 0;
    const source: PendingApprovalsSource = {
      pendingStats: () => {
        reads++;
        if (reads === 1) return Promise.resolve({ count: 3, oldestAgeSeconds: 4_000 });
        if (reads === 2) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:3306'));
        return new Promise(() => undefined); // a hung server
      },
    };
    const metrics = new FleetMetrics({ defaultMetrics: false, approvalsTimeoutMs: 50 });
    metrics.watchApprovals(source);
    expect(await sample(metrics, 'agentfleet_approvals_pending')).toBe(3);

    for (const errors of [1, 2, 3]) {
      const started = performance.now();
      const text = await metrics.metrics();
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(text).toContain('\nagentfleet_approvals_pending 3\n');
      expect(text).toContain('\nagentfleet_approvals_oldest_pending_seconds 4000\n');
      expect(text).toContain(`\nagentfleet_approvals_scrape_errors_total ${errors}\n`);
    }
    // The read that never answered is shared by the scrapes after it, not repeated on each.
    expect(reads).toBe(3);
  });

  it('is NaN, not 0, until a first read succeeds', async () => {
    const down: PendingApprovalsSource = { pendingStats: () => Promise.reject(new Error('down')) };
    const metrics = new FleetMetrics({ defaultMetrics: false, approvalsTimeoutMs: 50 });
    metrics.watchApprovals(down);
    // One scrape: each read below is one more failed read.
    const text = await metrics.metrics();
    // prom-client writes `Nan`; Prometheus reads NaN in any case.
    expect(text).toMatch(/^agentfleet_approvals_pending nan$/im);
    expect(text).toMatch(/^agentfleet_approvals_oldest_pending_seconds nan$/im);
    expect(text).toContain('\nagentfleet_approvals_scrape_errors_total 1\n');
  });

  it('refuses a second source', () => {
    const metrics = new FleetMetrics({ defaultMetrics: false });
    metrics.watchApprovals(store);
    expect(() => metrics.watchApprovals(store)).toThrow(/already watched/);
  });
});

describe('decisions applied by resumed runs', () => {
  it('counts them by outcome, every outcome present from the first scrape', async () => {
    const metrics = new FleetMetrics({ defaultMetrics: false });
    const lines = async () =>
      (await metrics.metrics())
        .split('\n')
        .filter((l) => l.startsWith('agentfleet_approval_decisions_total'));
    expect((await lines()).sort()).toEqual([
      'agentfleet_approval_decisions_total{decision="approve"} 0',
      'agentfleet_approval_decisions_total{decision="expire"} 0',
      'agentfleet_approval_decisions_total{decision="reject"} 0',
    ]);
    metrics.observeApprovalDecisions([
      { state: 'approved' },
      { state: 'approved' },
      { state: 'rejected' },
      { state: 'expired' },
      { state: 'pending' }, // not a decision
    ]);
    expect((await lines()).sort()).toEqual([
      'agentfleet_approval_decisions_total{decision="approve"} 2',
      'agentfleet_approval_decisions_total{decision="expire"} 1',
      'agentfleet_approval_decisions_total{decision="reject"} 1',
    ]);
  });
});
