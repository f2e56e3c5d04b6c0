// An agent_approvals row as the store reads it: every column checked (a row that does not match is a StoreError,
// never a wrong type), JSON columns parsed (the pool reads JSON as text), dates as ISO strings. The tool's schema
// is read apart (approvalSchemaOf): it is what an edit is checked against, not part of what callers are shown.
import type { RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { jsonColumn, parseRow } from '../store/rows.js';
import { APPROVAL_STATES, type Approval } from './approval.js';

const TABLE = 'agent_approvals';

const approvalColumns = z.object({
  id: z.string(),
  job_id: z.string(),
  batch_id: z.string().nullable(),
  tenant: z.string().nullable(),
  agent: z.string().nullable(),
  step: z.number().int(),
  call_id: z.string(),
  call_key: z.string(),
  tool: z.string(),
  arguments: jsonColumn(z.unknown()),
  state: z.enum(APPROVAL_STATES),
  requested_at: z.date(),
  expires_at: z.date(),
  decided_by: z.string().nullable(),
  decision: z.enum(['approve', 'reject']).nullable(),
  reason: z.string().nullable(),
  edited_arguments: jsonColumn(z.unknown()).nullable(),
  decided_at: z.date().nullable(),
});

const schemaColumn = z.object({
  arguments_schema: jsonColumn(z.record(z.string(), z.unknown())).nullable(),
});

export function toApproval(raw: RowDataPacket): Approval {
  const row = parseRow(approvalColumns, raw, TABLE);
  return {
    id: row.id,
    jobId: row.job_id,
    batchId: row.batch_id,
    tenant: row.tenant,
    agent: row.agent,
    step: row.step,
    callId: row.call_id,
    callKey: row.call_key,
    tool: row.tool,
    arguments: row.arguments,
    state: row.state,
    requestedAt: row.requested_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    decidedBy: row.decided_by,
    decision: row.decision,
    reason: row.reason,
    editedArguments: row.edited_arguments,
    decidedAt: row.decided_at?.toISOString() ?? null,
  };
}

/** The tool's JSON Schema kept with the row; null when the tool had none. */
export function approvalSchemaOf(raw: RowDataPacket): Record<string, unknown> | null {
  return parseRow(schemaColumn, raw, TABLE).arguments_schema;
}
