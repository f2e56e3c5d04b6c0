// Approvals over HTTP (docs/http-api.md#approvals), as zod schemas: the API checks requests with them, the
// OpenAPI document is generated from them, and FleetApprovals parses answers with them. Requests are strict (an
// unknown field is refused, naming it: a `by` in a body is never who decided); answers are loose objects.
import { z } from 'zod';
import { APPROVAL_STATES, type Approval } from '../approvals/approval.js';
import { agree, type Known, type Same } from '../util/schema-agreement.js';

export const MAX_REASON_CHARS = 2_000;
const MAX_ID_CHARS = 256;

const isoTime = z.string().describe('ISO 8601');

export const approvalSchema = z
  .looseObject({
    id: z.string(),
    jobId: z.string(),
    batchId: z.string().nullable(),
    tenant: z.string().nullable(),
    agent: z.string().nullable(),
    step: z.number().int(),
    callId: z.string().describe('the model’s id of the call'),
    callKey: z.string().describe('the call’s stable key, `<runId>:<step>:<position>`'),
    tool: z.string(),
    arguments: z.unknown().describe('as the tool would receive them'),
    state: z.enum(APPROVAL_STATES),
    requestedAt: isoTime,
    expiresAt: isoTime,
    decidedBy: z
      .string()
      .nullable()
      .describe(
        'the name of the API token (or `console:<user>`, `shell:<user>`) that decided; null while pending',
      ),
    decision: z
      .enum(['approve', 'reject'])
      .nullable()
      .describe('an expired call is `reject` with the reason `expired`'),
    reason: z.string().nullable(),
    editedArguments: z
      .unknown()
      .describe('the arguments the approver changed them to; null when approved as asked'),
    decidedAt: isoTime.nullable(),
  })
  .describe('A tool call that waits (or waited) for a person’s decision.');

export const approvalListSchema = z
  .looseObject({ approvals: z.array(approvalSchema) })
  .describe('Approvals, newest first.');

export const decisionSchema = z.enum(['approve', 'reject'], { error: 'must be approve or reject' });
const reasonSchema = z
  .string({ error: 'must be a string' })
  .max(MAX_REASON_CHARS, `must be at most ${MAX_REASON_CHARS.toLocaleString('en-US')} characters`);

export const decisionBodySchema = z
  .strictObject({
    decision: decisionSchema,
    reason: reasonSchema.optional(),
    arguments: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('approve only: the arguments the call runs with instead, checked against the tool’s schema'),
  })
  .superRefine((body, ctx) => {
    if (body.decision === 'reject' && body.arguments !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['arguments'],
        message: 'only an approval can edit the arguments',
      });
  })
  .describe('A decision on one call. Who decided is the name of the token that sent it.');

export const batchDecisionBodySchema = z
  .strictObject({
    tool: z.string().min(1).max(64),
    decision: decisionSchema,
    reason: reasonSchema.optional(),
  })
  .describe('One decision on every pending call of one tool in a batch.');

export const batchDecidedSchema = z
  .looseObject({
    decided: z.array(approvalSchema).describe('the calls this decision decided'),
    conflicts: z.number().int().min(0).describe('calls decided (or expired) meanwhile by someone else'),
  })
  .describe('What a batch-wide decision decided.');

export const approvalConflictSchema = z
  .looseObject({
    error: z.literal('already_decided'),
    approval: approvalSchema.describe('the first decision'),
  })
  .describe('A call decided before (or expired): the first decision stands.');

/** GET /v1/approvals's query: every parameter optional, unknown ones refused. */
export const approvalQuerySchema = z.strictObject({
  state: z.enum(APPROVAL_STATES).optional(),
  jobId: z.string().min(1).max(MAX_ID_CHARS).optional(),
  batchId: z.string().min(1).max(MAX_ID_CHARS).optional(),
  tool: z.string().min(1).max(64).optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'must be a whole number from 1 to 1000')
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(1, 'must be a whole number from 1 to 1000')
        .max(1000, 'must be a whole number from 1 to 1000'),
    )
    .optional(),
});

export type DecisionBody = z.infer<typeof decisionBodySchema>;
export type BatchDecisionBody = z.infer<typeof batchDecisionBodySchema>;
export type ApprovalQuery = z.infer<typeof approvalQuerySchema>;

// The schema and the store's Approval describe the same JSON: a field added to one alone fails the type check.
agree<Same<keyof Known<z.infer<typeof approvalSchema>>, keyof Approval>>();
agree<Same<Known<z.infer<typeof approvalSchema>>['state'], Approval['state']>>();
