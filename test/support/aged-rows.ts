// Rows of the fleet's store written as if long ago, for the store sweeper's tests: runs, their steps, effect
// ledger rows and approvals with the ages the test chooses, inserted in multi-row statements.
import type { Pool } from 'mysql2/promise';

export const DAY_MS = 86_400_000;
export const daysAgo = (days: number, now = Date.now()): Date => new Date(now - days * DAY_MS);

export async function insertRun(
  pool: Pool,
  jobId: string,
  finishedDaysAgo: number | null,
  startedDaysAgo = (finishedDaysAgo ?? 0) + 0.01,
): Promise<void> {
  await pool.query(
    `INSERT INTO agent_runs (job_id, task, model, protocol, status, steps, started_at, finished_at)
     VALUES (?, 'a task', 'gpt-4o', 'tools', ?, 1, ?, ?)`,
    [
      jobId,
      finishedDaysAgo === null ? 'running' : 'succeeded',
      daysAgo(startedDaysAgo),
      finishedDaysAgo === null ? null : daysAgo(finishedDaysAgo),
    ],
  );
}

/** `count` steps of one job, numbered from 1, created `createdDaysAgo` days ago. */
export async function insertSteps(
  pool: Pool,
  jobId: string,
  count: number,
  createdDaysAgo: number,
): Promise<void> {
  const created = daysAgo(createdDaysAgo);
  for (let first = 1; first <= count; first += 1_000) {
    const rows: unknown[][] = [];
    for (let step = first; step < Math.min(first + 1_000, count + 1); step++) {
      rows.push([jobId, step, 'action', '[]', 'an observation', created]);
    }
    await pool.query(
      'INSERT INTO agent_steps (job_id, step, kind, action, observation, created_at) VALUES ?',
      [rows],
    );
  }
}

export async function insertEffect(
  pool: Pool,
  effectKey: string,
  jobId: string,
  status: 'pending' | 'done' | 'failed' | 'uncertain',
  updatedDaysAgo: number,
): Promise<void> {
  const at = daysAgo(updatedDaysAgo);
  await pool.query(
    `INSERT INTO effect_ledger (effect_key, job_id, tool, status, started_at, created_at, updated_at)
     VALUES (?, ?, 'send_email', ?, ?, ?, ?)`,
    [effectKey, jobId, status, at, at, at],
  );
}

export async function insertApproval(pool: Pool, id: string, jobId: string, daysOld: number): Promise<void> {
  const at = daysAgo(daysOld);
  await pool.query(
    `INSERT INTO agent_approvals (id, job_id, step, call_id, call_key, tool, arguments, state, requested_at, expires_at)
     VALUES (?, ?, 1, 'call_1', ?, 'send_email', '{}', 'approved', ?, ?)`,
    [id, jobId, `${jobId}:1:0`, at, at],
  );
}

/** A batch created `createdDaysAgo` days ago, completed `completedDaysAgo` days ago (null: still running). */
export async function insertBatch(
  pool: Pool,
  batchId: string,
  completedDaysAgo: number | null,
  createdDaysAgo = (completedDaysAgo ?? 0) + 0.01,
): Promise<void> {
  await pool.query(
    `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, state, summary, created_at, completed_at)
     VALUES (?, 'a batch', 1, '[]', ?, ?, ?, ?)`,
    [
      batchId,
      completedDaysAgo === null ? 'running' : 'completed',
      completedDaysAgo === null ? null : '{}',
      daysAgo(createdDaysAgo),
      completedDaysAgo === null ? null : daysAgo(completedDaysAgo),
    ],
  );
}

export async function insertBatchReport(pool: Pool, batchId: string, writtenDaysAgo: number): Promise<void> {
  const at = daysAgo(writtenDaysAgo);
  await pool.query(
    `INSERT INTO batch_reports (batch_id, state, summary, markdown, html, created_at, updated_at)
     VALUES (?, 'completed', '{}', '# report', '<p>report</p>', ?, ?)`,
    [batchId, at, at],
  );
}

/** A row of send_email's ledger before migration 011. */
export async function insertEmailLedgerRow(
  pool: Pool,
  callKey: string,
  status: 'pending' | 'sent' | 'dry_run' | 'failed' | 'uncertain',
  updatedDaysAgo: number,
): Promise<void> {
  const at = daysAgo(updatedDaysAgo);
  await pool.query(
    `INSERT INTO email_ledger (call_key, job_id, recipient, subject, message_id, status, created_at, updated_at)
     VALUES (?, 'a-job', 'a@example.com', 'a subject', ?, ?, ?, ?)`,
    [callKey, `<${callKey}@agent-fleet.local>`, status, at, at],
  );
}
