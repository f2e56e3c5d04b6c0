// The batch report's approvals from a real store (a database of its own, af_test_rapprovals_<random>, dropped at the
// end): calls of the batch's tasks asked and decided through ApprovalStore in all four states, read back by the
// report's store, and `scripts/report.ts` run as `npm run report` would, printing and writing them escaped. A
// store no worker has migrated to 017 still reports its batches. With no server every test fails, none is skipped.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { approvalIdOf, type NewApproval } from '../../../src/approvals/approval.js';
import { ApprovalStore } from '../../../src/approvals/approval-store.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../../../src/store/pool.js';
import { RunsRepository } from '../../../src/store/runs-repository.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const RUN_ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_rapprovals_${RUN_ID}`;
const URL_ = `mysql://root@127.0.0.1:3306/${DATABASE}`;
const BATCH = `mail-${RUN_ID}`;
const JOBS = ['j1', 'j2', 'j3', 'j4'].map((id) => `${RUN_ID}-${id}`);
const T0 = new Date('2026-03-01T09:00:00.000Z');
const HOUR = 3_600_000;
const HOSTILE = '<script>alert(1)</script> | \u001b[2Jcleared';

let pool: Pool;
let outDir: string;

setupOrFail(async () => {
  pool = await createStorePool(URL_, { connectionLimit: 4 });
  await migrate(pool);
  outDir = await mkdtemp(join(tmpdir(), 'af-report-approvals-'));
  const runs = new RunsRepository(pool);
  for (const jobId of JOBS) {
    await runs.startRun({
      jobId,
      task: 'mail the team',
      model: 'm',
      protocol: 'tools',
      batchId: BATCH,
      attempt: 1,
    });
  }
  await pool.query(
    `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, created_at) VALUES (?, NULL, ?, ?, 'running', ?)`,
    [BATCH, JOBS.length, JSON.stringify(JOBS), T0],
  );
  const store = new ApprovalStore(pool);
  const asked = (jobId: string, expiresAt: Date): NewApproval => ({
    jobId,
    batchId: BATCH,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: 'call_1',
    callKey: `${jobId}:1:0`,
    instance: '1',
    tool: 'send_email',
    arguments: { to: 'ada@example.com', body: '<img src=x onerror=alert(1)>' },
    argumentsSchema: null,
    requestedAt: T0,
    expiresAt,
  });
  const far = new Date(Date.now() + 24 * HOUR);
  await store.request([
    asked(JOBS[0]!, far),
    asked(JOBS[1]!, far),
    asked(JOBS[2]!, far),
    asked(JOBS[3]!, new Date(T0.getTime() + HOUR)),
  ]);
  const id = (jobId: string) => approvalIdOf(`${jobId}:1:0`, '1');
  const now = new Date();
  await store.decide(
    id(JOBS[1]!),
    { decision: 'approve', by: 'alice', editedArguments: { to: 'bob@example.com' } },
    now,
  );
  await store.decide(id(JOBS[2]!), { decision: 'reject', by: 'console:<b>eve</b>', reason: HOSTILE }, now);
  await store.expireDue(now);
});

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
  await pool?.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await pool?.end();
});

function report(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/report.ts', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, MYSQL_URL: URL_, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('approvals in the batch report', () => {
  it('are read with the batch, in all four states', async () => {
    const loaded = (await new BatchReportStore(pool).loadBatch(BATCH))!;
    expect(loaded.approvals.map((a) => [a.jobId, a.state]).sort()).toEqual([
      [JOBS[0], 'pending'],
      [JOBS[1], 'approved'],
      [JOBS[2], 'rejected'],
      [JOBS[3], 'expired'],
    ]);
  });

  it('npm run report prints and writes them, escaped', async () => {
    const run = await report(['--batch', BATCH, '--out', outDir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'Approvals: 4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired',
    );
    expect(run.stdout).toContain(`task 1 (${JOBS[0]}) send_email: pending since 2026-03-01T09:00:00Z`);
    expect(run.stdout).toMatch(
      new RegExp(`task 2 \\(${JOBS[1]}\\) send_email: approved by alice at \\S+, arguments edited`),
    );
    expect(run.stdout).toMatch(
      new RegExp(`task 3 \\(${JOBS[2]}\\) send_email: rejected by console:<b>eve</b> at \\S+: <script>`),
    );
    expect(run.stdout).toMatch(new RegExp(`task 4 \\(${JOBS[3]}\\) send_email: expired at \\S+: expired`));
    expect(run.stdout).not.toContain('\u001b');

    const markdown = await readFile(join(outDir, `${BATCH}.md`), 'utf8');
    const html = await readFile(join(outDir, `${BATCH}.html`), 'utf8');
    expect(markdown).toContain(
      '4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired.',
    );
    expect(markdown).toContain('console:\\<b\\>eve\\</b\\>');
    expect(markdown).toContain('\\<script\\>alert(1)\\</script\\> \\|');
    expect(html).toContain('<h2>Approvals</h2>');
    expect(html).not.toMatch(/<script|<b>|onerror/i);
    expect(html).toContain('console:&lt;b&gt;eve&lt;/b&gt;');
    // What was written is what batch_reports keeps.
    expect((await new BatchReportStore(pool).getReport(BATCH))?.markdown).toBe(markdown);
  });

  it('a store without the approvals table (not migrated to 017) reports its batch without them', async () => {
    await pool.query('DROP TABLE agent_approvals');
    const loaded = (await new BatchReportStore(pool).loadBatch(BATCH))!;
    expect(loaded.approvals).toEqual([]);
    expect(loaded.runs).toHaveLength(JOBS.length);
  });
});
