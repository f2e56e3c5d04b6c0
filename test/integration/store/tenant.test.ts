// A run's tenant in the store (migration 016), against the real MariaDB/MySQL: written when the run starts, kept
// when it starts again, read back into the row; the run console lists a tenant's runs only; the batch report
// groups the batch's tasks by it; the runs page and the terminal timeline show it.
import { randomBytes } from 'node:crypto';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { ConsoleStore } from '../../../src/console/console-store.js';
import { batchPage } from '../../../src/console/pages/batch-page.js';
import { parseRunFilters, runsPage } from '../../../src/console/pages/runs-page.js';
import { renderTimelineText } from '../../../src/console/render-timeline-text.js';
import { buildTimeline } from '../../../src/console/timeline.js';
import { buildBatchReport } from '../../../src/reports/batch-summary.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const RUN_ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_tenant_${RUN_ID}`;
const BATCH = `tenants-${RUN_ID}`;

function databaseUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.href;
}

function result(jobId: string, costUsd: number): AgentResult {
  return {
    jobId,
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'done',
    steps: 1,
    toolCalls: 0,
    usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd },
    error: null,
  };
}

let pool: Pool;
let repository: RunsRepository;
let setupError: unknown;
const JOBS: [string, string | null, number][] = [
  [`${RUN_ID}-a1`, 'acme', 0.1],
  [`${RUN_ID}-a2`, 'acme', 0.2],
  [`${RUN_ID}-g1`, 'globex', 0.4],
  [`${RUN_ID}-n1`, null, 0.8],
];

beforeAll(async () => {
  try {
    pool = await createStorePool(databaseUrl(DATABASE), { connectionLimit: 2, connectTimeout: 5_000 });
    await migrate(pool);
    repository = new RunsRepository(pool);
    await repository.startRuns(
      JOBS.map(([jobId, tenant]) => ({
        jobId,
        task: `task of ${jobId}`,
        model: 'gpt-4o',
        protocol: 'tools' as const,
        batchId: BATCH,
        attempt: 1,
        ...(tenant ? { tenant } : {}),
      })),
    );
    for (const [jobId, , cost] of JOBS) await repository.finishRun(result(jobId, cost));
    await pool.query(
      `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, created_at)
       VALUES (?, NULL, ?, ?, 'completed', ?)`,
      [BATCH, JOBS.length, JSON.stringify(JOBS.map(([jobId]) => jobId)), new Date()],
    );
  } catch (error) {
    setupError = error;
  }
});

// A failed beforeAll only marks the tests skipped; rethrowing per test makes a missing server a failure.
beforeEach(() => {
  if (setupError !== undefined) throw setupError;
});

afterAll(async () => {
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

describe("a run's tenant in the store", () => {
  it('is a nullable, indexed column of agent_runs', async () => {
    const [columns] = await pool.query<RowDataPacket[]>("SHOW COLUMNS FROM agent_runs LIKE 'tenant'");
    expect(columns[0]).toMatchObject({ Null: 'YES' });
    const [keys] = await pool.query<RowDataPacket[]>(
      "SHOW INDEX FROM agent_runs WHERE Column_name = 'tenant'",
    );
    expect(keys.length).toBeGreaterThan(0);
  });

  it('is written with the start, read back, and null for a task without one', async () => {
    expect((await repository.getRun(JOBS[0]![0]))?.tenant).toBe('acme');
    expect((await repository.getRun(JOBS[2]![0]))?.tenant).toBe('globex');
    expect((await repository.getRun(JOBS[3]![0]))?.tenant).toBeNull();
  });

  it('is kept when the run starts again from a record that does not carry it', async () => {
    const jobId = `${RUN_ID}-restart`;
    const start = { jobId, task: 't', model: 'gpt-4o', protocol: 'tools' as const, attempt: 1 };
    await repository.startRun({ ...start, tenant: 'initech' });
    await repository.startRun({ ...start, attempt: 2 });
    expect(await repository.getRun(jobId)).toMatchObject({ tenant: 'initech', attempts: 2 });
  });
});

describe('the run console and the trace', () => {
  it("lists a tenant's runs only, and shows the tenant in the list", async () => {
    const store = new ConsoleStore(pool);
    const parsed = parseRunFilters({ tenant: 'acme', batch: BATCH });
    if (!parsed.ok) throw new Error(parsed.message);
    const runs = await store.listRuns(parsed.filters);
    expect(runs.map((run) => run.jobId).sort()).toEqual([JOBS[0]![0], JOBS[1]![0]].sort());
    const html = runsPage(runs, { tenant: 'acme' });
    expect(html).toContain('<th>Tenant</th>');
    expect(html).toContain('<td>acme</td>');
    expect(html).toContain('name="tenant" value="acme"');
    expect((await store.listRuns({ tenant: 'nobody' })).length).toBe(0);
  });

  it('refuses a tenant filter that cannot be a tenant, naming the field', () => {
    expect(parseRunFilters({ tenant: 'a b' })).toMatchObject({ ok: false, message: /^tenant: / });
  });

  it("shows the run's tenant in the terminal timeline and its JSON", async () => {
    const loaded = await new ConsoleStore(pool).loadRun(JOBS[2]![0]);
    if (!loaded) throw new Error('run not found');
    const timeline = buildTimeline(loaded.run, loaded.steps);
    expect(timeline.run.tenant).toBe('globex');
    expect(renderTimelineText(timeline).split('\n')[0]).toContain('· tenant globex ·');
  });
});

describe('the batch report', () => {
  it("groups the batch's tasks by tenant, read from the store", async () => {
    const loaded = await new BatchReportStore(pool).loadBatch(BATCH);
    if (!loaded) throw new Error('batch not found');
    const report = buildBatchReport(loaded.batch, loaded.runs);
    expect(report.tenants.map((line) => [line.tenant, line.tasks, line.usage.costUsd])).toEqual([
      ['acme', 2, 0.3],
      ['globex', 1, 0.4],
      [null, 1, 0.8],
    ]);
  });

  it("shows the tenants on the console's batch page, each linked to its runs of the batch", async () => {
    const loaded = await new ConsoleStore(pool).loadBatch(BATCH);
    if (!loaded) throw new Error('batch not found');
    const html = batchPage(buildBatchReport(loaded.batch, loaded.runs));
    expect(html).toContain('<h2>Tenants</h2>');
    expect(html).toContain(`href="/console/runs?batch=${BATCH}&amp;tenant=acme">acme</a>`);
    expect(html).toContain('(no tenant)');
  });
});
