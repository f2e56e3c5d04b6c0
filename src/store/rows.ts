// The rows of agent_runs and agent_steps as the application sees them, and the one place that converts
// driver rows into them. Parsing (rather than casting) means a column that drifted from what the code
// expects fails loudly at the read instead of surfacing later as a wrong type.
import type { RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { type ErrorKind, type RunError, StoreError } from '../kernel/errors.js';
import type { ProtocolName } from '../kernel/protocol.js';
import type { RunStatus, StepTrace, StopReason, TraceEvent, TraceKind } from '../kernel/types.js';
import { modelPriceSchema, type ModelPrice } from '../../config/prices.js';
import { agree, type Same } from '../util/schema-agreement.js';

export type RunRowStatus = 'running' | RunStatus;

export interface RunRow {
  jobId: string;
  batchId: string | null;
  task: string;
  model: string;
  protocol: ProtocolName;
  /** The fleet agent the run served; null for runs recorded before agents were stored. */
  agent: string | null;
  /** Whom the run was for (the task's `tenant`); null without one, and for runs recorded before it was kept. */
  tenant?: string | null;
  /** The job whose agent called this run's (docs/child-agents.md); null for a run no agent called. */
  parentJobId?: string | null;
  status: RunRowStatus;
  stopReason: StopReason | null;
  /** Why a budget stopped the run, in numbers; null otherwise. */
  stopDetail: string | null;
  answer: string | null;
  /** Present for a run whose agent has an output schema: the value, or null when the run ended without one. */
  output?: unknown;
  steps: number;
  toolCalls: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Parts of the tokens above; 0 when the endpoint reported none. */
  cachedPromptTokens: number;
  reasoningTokens: number;
  /** The endpoint reported no usage for some call: the counts are our estimate. */
  usageEstimated: boolean;
  costUsd: number;
  /** What the flex tier saved against the standard prices; 0 without flex calls. */
  flexSavedUsd: number;
  /** The prices the run was billed at; null for runs recorded before they were kept. */
  prices: ModelPrice | null;
  error: RunError | null;
  metadata: unknown;
  attempts: number;
  startedAt: Date;
  finishedAt: Date | null;
  updatedAt: Date;
  /** When the store sweeper deleted the run's steps (migration 020); null while they are kept. */
  stepsDeletedAt?: Date | null;
}

export interface StepRow {
  id: number;
  jobId: string;
  step: number;
  kind: TraceKind;
  actions: StepTrace['actions'];
  observation: string;
  promptTokens: number;
  completionTokens: number;
  cachedPromptTokens: number;
  reasoningTokens: number;
  costUsd: number;
  latencyMs: number;
  modelCalls: number;
  error: string | null;
  /** Each tool call's observation apart (migration 013); null in rows written before. */
  observations: string[] | null;
  /** The step's model calls alone; null in rows written before migration 013. */
  modelLatencyMs: number | null;
  /** Folds and budget decisions before the step (StepTrace.events); empty when none. */
  events: TraceEvent[];
  createdAt: Date;
}

// Records keyed by the unions, so adding a member to one of them fails to compile until it is listed here.
const STATUSES: Record<RunRowStatus, RunRowStatus> = {
  running: 'running',
  succeeded: 'succeeded',
  stopped: 'stopped',
  failed: 'failed',
};
const STOP_REASONS: Record<StopReason, StopReason> = {
  answer: 'answer',
  max_steps: 'max_steps',
  token_budget: 'token_budget',
  cost_budget: 'cost_budget',
  deadline: 'deadline',
  cancelled: 'cancelled',
  error: 'error',
  awaiting_approval: 'awaiting_approval',
  awaiting_children: 'awaiting_children',
};
const PROTOCOLS: Record<ProtocolName, ProtocolName> = { tools: 'tools', json: 'json' };
const TRACE_KINDS: Record<TraceKind, TraceKind> = {
  action: 'action',
  answer: 'answer',
  invalid: 'invalid',
  final: 'final',
};
const ERROR_KINDS: Record<ErrorKind, ErrorKind> = {
  config: 'config',
  input: 'input',
  model_api: 'model_api',
  model_behavior: 'model_behavior',
  tool: 'tool',
  system: 'system',
};

/** JSON columns arrive as text (the pool sets jsonStrings, MariaDB has no JSON type anyway). */
export const jsonColumn = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'stored JSON does not parse' });
        return z.NEVER;
      }
    })
    .pipe(schema);

const runErrorSchema = z.object({
  kind: z.enum(ERROR_KINDS),
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
});

// Rows written before actions carried their outcome read as successful calls of unknown duration.
const actionsSchema = z.array(
  z.object({
    id: z.string(),
    tool: z.string(),
    args: z.unknown(),
    ok: z.boolean().default(true),
    errorCode: z.string().nullable().default(null),
    latencyMs: z.number().default(0),
  }),
);

const runColumns = z.object({
  job_id: z.string(),
  batch_id: z.string().nullable(),
  task: z.string(),
  model: z.string(),
  protocol: z.enum(PROTOCOLS),
  agent: z.string().nullable(),
  // Optional: rows read by a process whose store is older than migration 016.
  tenant: z.string().nullable().optional(),
  // Optional: rows read by a process whose store is older than migration 018.
  parent_job_id: z.string().nullable().optional(),
  status: z.enum(STATUSES),
  stop_reason: z.enum(STOP_REASONS).nullable(),
  stop_detail: z.string().nullable(),
  answer: z.string().nullable(),
  // Kept as text here: SQL NULL (no output schema) and the JSON null (no value) must stay apart.
  output: z.string().nullable().optional(),
  steps: z.number(),
  tool_calls: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  cached_prompt_tokens: z.number(),
  reasoning_tokens: z.number(),
  usage_estimated: z.number(),
  cost_usd: z.number(),
  flex_saved_usd: z.number(),
  prices: jsonColumn(modelPriceSchema).nullable(),
  error: jsonColumn(runErrorSchema).nullable(),
  metadata: jsonColumn(z.unknown()).nullable(),
  attempts: z.number(),
  started_at: z.date(),
  finished_at: z.date().nullable(),
  updated_at: z.date(),
  // Optional: rows read by a process whose store is older than migration 020.
  steps_deleted_at: z.date().nullable().optional(),
});

// An event of a type (or shape) this code does not know, written by a newer worker, is left out, not an error.
// Every type of TraceEvent is here: one missing would be dropped from every stored step the console reads.
const traceEvents = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('fold'),
    messages: z.number(),
    summary: z.string(),
    byModel: z.boolean(),
    modelCalls: z.number(),
    promptTokens: z.number(),
    completionTokens: z.number(),
    costUsd: z.number(),
  }),
  z.object({
    type: z.literal('clear'),
    results: z.number(),
    tokens: z.number(),
    tools: z.array(z.string()),
  }),
  z.object({
    type: z.literal('final_turn'),
    reason: z.enum(['max_steps', 'token_budget', 'cost_budget', 'deadline']),
    why: z.string(),
  }),
  z.object({
    type: z.literal('approval'),
    callId: z.string(),
    tool: z.string(),
    decision: z.enum(['approve', 'reject', 'expire']),
    by: z.string().nullable(),
    reason: z.string().nullable(),
    requestedAt: z.number(),
    decidedAt: z.number().nullable(),
    editedArguments: z.unknown().optional(),
  }),
  z.object({
    type: z.literal('recall'),
    query: z.string(),
    notes: z.array(z.object({ id: z.string(), text: z.string() })),
  }),
]);
const traceEventSchema: z.ZodType<TraceEvent> = traceEvents;
agree<Same<z.infer<typeof traceEvents>['type'], TraceEvent['type']>>();

const stepColumns = z.object({
  // BIGINT: a number while it is a safe integer (supportBigNumbers), which an auto-increment id stays.
  id: z.coerce.number(),
  job_id: z.string(),
  step: z.number(),
  kind: z.enum(TRACE_KINDS),
  action: jsonColumn(actionsSchema),
  observation: z.string(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  cached_prompt_tokens: z.number(),
  reasoning_tokens: z.number(),
  cost_usd: z.number(),
  latency_ms: z.number(),
  model_calls: z.number(),
  error: z.string().nullable(),
  // Optional: rows read by a process whose store is older than migration 013.
  observations: jsonColumn(z.array(z.string())).nullable().optional(),
  model_latency_ms: z.number().nullable().optional(),
  events: jsonColumn(z.array(z.unknown())).nullable().optional(),
  created_at: z.date(),
});

export function toRunRow(raw: RowDataPacket): RunRow {
  const row = parseRow(runColumns, raw, 'agent_runs');
  const output = typeof row.output === 'string' ? { output: parseStoredJson(row.output, 'output') } : {};
  return {
    jobId: row.job_id,
    batchId: row.batch_id,
    task: row.task,
    model: row.model,
    protocol: row.protocol,
    agent: row.agent,
    tenant: row.tenant ?? null,
    parentJobId: row.parent_job_id ?? null,
    status: row.status,
    stopReason: row.stop_reason,
    stopDetail: row.stop_detail,
    answer: row.answer,
    ...output,
    steps: row.steps,
    toolCalls: row.tool_calls,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    totalTokens: row.total_tokens,
    cachedPromptTokens: row.cached_prompt_tokens,
    reasoningTokens: row.reasoning_tokens,
    usageEstimated: row.usage_estimated !== 0,
    costUsd: row.cost_usd,
    flexSavedUsd: row.flex_saved_usd,
    prices: row.prices,
    error: row.error,
    metadata: row.metadata,
    attempts: row.attempts,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
    stepsDeletedAt: row.steps_deleted_at ?? null,
  };
}

export function toStepRow(raw: RowDataPacket): StepRow {
  const row = parseRow(stepColumns, raw, 'agent_steps');
  return {
    id: row.id,
    jobId: row.job_id,
    step: row.step,
    kind: row.kind,
    actions: row.action,
    observation: row.observation,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    cachedPromptTokens: row.cached_prompt_tokens,
    reasoningTokens: row.reasoning_tokens,
    costUsd: row.cost_usd,
    latencyMs: row.latency_ms,
    modelCalls: row.model_calls,
    error: row.error,
    observations: row.observations ?? null,
    modelLatencyMs: row.model_latency_ms ?? null,
    events: knownEvents(row.events ?? []),
    createdAt: row.created_at,
  };
}

function parseStoredJson(text: string, column: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StoreError(
      'store_bad_row',
      `agent_runs row has an unexpected ${column}: stored JSON does not parse`,
    );
  }
}

/** A row checked against its columns' schema: a column that does not match is a StoreError, never a wrong type. */
export function parseRow<T extends z.ZodType>(schema: T, raw: RowDataPacket, table: string): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const column = issue?.path.join('.') || 'shape';
  throw new StoreError('store_bad_row', `${table} row has an unexpected ${column}: ${issue?.message ?? ''}`);
}

function knownEvents(events: readonly unknown[]): TraceEvent[] {
  return events.flatMap((event) => {
    const parsed = traceEventSchema.safeParse(event);
    return parsed.success ? [parsed.data] : [];
  });
}
