// The batch report's MySQL side: reads a batch (agent_batches) and the runs of its tasks (agent_runs), and keeps
// the rendered report in batch_reports (migration 004), one row per batch, replaced each time it is made.
// Rows are parsed, not cast, as in src/store/rows.ts: a column that drifted fails loudly here.
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { StoreError } from '../kernel/errors.js';
import { SentEmails, isNotDelivered } from '../tools/sent-emails.js';
import type { Approval } from '../approvals/approval.js';
import { ApprovalStore } from '../approvals/approval-store.js';
import { mysqlErrorCode } from '../store/mysql-errors.js';
import { jsonColumn, parseRow, toRunRow, type RunRow } from '../store/rows.js';
import type { BatchRecord, BatchState, BatchSummary, EmailDoubt } from './batch-summary.js';

export interface LoadedBatch {
  batch: BatchRecord;
  /** The runs of the batch's job ids, and any other run whose batch_id names it (reported as a warning). */
  runs: RunRow[];
  /** Emails of the batch's tasks not known to have been delivered (send_email's rows of the effect ledger). */
  emails: EmailDoubt[];
  /** The calls of the batch's tasks that waited for a decision, in any state (agent_approvals). */
  approvals: Approval[];
}

export interface BatchReportInput {
  batchId: string;
  state: BatchState;
  summary: BatchSummary;
  markdown: string;
  html: string;
}

export interface StoredBatchReport extends BatchReportInput {
  createdAt: Date;
  updatedAt: Date;
}

/** agent_batches.batch_id is VARCHAR(64) in ASCII: anything else cannot name a batch. */
export const BATCH_ID_PATTERN = /^[\x20-\x7e]{1,64}$/;
/** MEDIUMTEXT holds 2^24 - 1 bytes. */
export const MEDIUMTEXT_MAX_BYTES = 16_777_215;

// BIGINT and DECIMAL come back as numbers (the pool sets decimalNumbers and supportBigNumbers), or as a string
// for a BIGINT past 2^53.
const numeric = z.union([z.number(), z.string().regex(/^-?\d+(\.\d+)?$/)]).transform(Number);

const batchColumns = z.object({
  batch_id: z.string(),
  name: z.string().nullable(),
  tasks: z.number().int(),
  job_ids: jsonColumn(z.array(z.union([z.string(), z.number()]).transform(String))),
  max_cost_usd: numeric.nullable(),
  max_tokens: numeric.nullable(),
  state: z.string(),
  summary: jsonColumn(z.unknown()).nullable(),
  created_at: z.date(),
  completed_at: z.date().nullable(),
  forecast: jsonColumn(z.unknown()).nullable(),
});

const summarySchema = z.object({
  batchId: z.string(),
  tasks: z.number(),
  succeeded: z.number(),
  stopped: z.number(),
  failed: z.number(),
  usage: z.object({
    promptTokens: z.number(),
    completionTokens: z.number(),
    totalTokens: z.number(),
    cachedPromptTokens: z.number().optional(),
    reasoningTokens: z.number().optional(),
    costUsd: z.number(),
    flexSavedUsd: z.number().optional(),
  }),
});

const reportColumns = z.object({
  batch_id: z.string(),
  state: z.enum(['running', 'completed']),
  summary: jsonColumn(summarySchema),
  markdown: z.string(),
  html: z.string(),
  created_at: z.date(),
  updated_at: z.date(),
});

export class BatchReportStore {
  constructor(private readonly pool: Pool) {}

  /** The batch and the runs of its tasks, or null when there is no such batch. */
  async loadBatch(batchId: string): Promise<LoadedBatch | null> {
    if (!BATCH_ID_PATTERN.test(batchId)) return null;
    const [batchRows] = await this.pool.query<RowDataPacket[]>(
      `SELECT batch_id, name, tasks, job_ids, max_cost_usd, max_tokens, state, summary, created_at, completed_at,
         forecast
       FROM agent_batches WHERE batch_id = ?`,
      [batchId],
    );
    const raw = batchRows[0];
    if (raw === undefined) return null;
    const row = parseRow(batchColumns, raw, 'agent_batches');
    const batch: BatchRecord = {
      batchId: row.batch_id,
      name: row.name,
      tasks: row.tasks,
      jobIds: row.job_ids,
      maxCostUsd: row.max_cost_usd,
      maxTokens: row.max_tokens,
      state: row.state,
      summary: row.summary,
      createdAt: row.created_at,
      completedAt: row.completed_at,
      forecast: row.forecast,
    };
    // One statement, so every run is read at the same moment. mysql2 expands the array into a list.
    const [runRows] =
      batch.jobIds.length === 0
        ? await this.pool.query<RowDataPacket[]>('SELECT * FROM agent_runs WHERE batch_id = ?', [batchId])
        : await this.pool.query<RowDataPacket[]>(
            'SELECT * FROM agent_runs WHERE job_id IN (?) OR batch_id = ?',
            [batch.jobIds, batchId],
          );
    const doubtful = await new SentEmails(this.pool).listDoubtful(batch.jobIds);
    const emails = doubtful.map((entry): EmailDoubt => ({
      jobId: entry.jobId,
      callKey: entry.callKey,
      recipient: entry.recipient,
      messageId: entry.messageId,
      state: isNotDelivered(entry) ? 'not_delivered' : entry.status === 'uncertain' ? 'uncertain' : 'pending',
      note: entry.error,
    }));
    return { batch, runs: runRows.map(toRunRow), emails, approvals: await this.approvalsOf(batchId) };
  }

  /** A store no worker has migrated to 017 yet has no approvals table, and so no approvals: its report still works. */
  private async approvalsOf(batchId: string): Promise<Approval[]> {
    try {
      return await new ApprovalStore(this.pool).forBatch(batchId);
    } catch (error) {
      if (mysqlErrorCode(error) === 'ER_NO_SUCH_TABLE') return [];
      throw error;
    }
  }

  /** Inserts or replaces the batch's report; created_at stays that of the first one. */
  async saveReport(report: BatchReportInput): Promise<void> {
    for (const [column, text] of [
      ['markdown', report.markdown],
      ['html', report.html],
    ] as const) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > MEDIUMTEXT_MAX_BYTES) {
        throw new StoreError(
          'report_too_large',
          `the ${column} report of batch ${report.batchId} is ${bytes} bytes, over the ${MEDIUMTEXT_MAX_BYTES} of batch_reports.${column}`,
        );
      }
    }
    await this.pool.query(
      `INSERT INTO batch_reports (batch_id, state, summary, markdown, html)
       VALUES (?, ?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE
         state = VALUES(state), summary = VALUES(summary), markdown = VALUES(markdown), html = VALUES(html),
         updated_at = CURRENT_TIMESTAMP(3)`,
      [report.batchId, report.state, JSON.stringify(report.summary), report.markdown, report.html],
    );
  }

  async getReport(batchId: string): Promise<StoredBatchReport | null> {
    if (!BATCH_ID_PATTERN.test(batchId)) return null;
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM batch_reports WHERE batch_id = ?', [
      batchId,
    ]);
    const raw = rows[0];
    if (raw === undefined) return null;
    const row = parseRow(reportColumns, raw, 'batch_reports');
    return {
      batchId: row.batch_id,
      state: row.state,
      summary: row.summary,
      markdown: row.markdown,
      html: row.html,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
}
