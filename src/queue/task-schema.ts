// The task (docs/tasks-and-results.md), validated by every producer before enqueue and again by the worker, which fails
// an invalid job without retrying. Errors name the field's path.
import { z } from 'zod';
import { snapshotJson, TASK_JSON_LIMITS } from './json-structure.js';
import { AGENT_NAME } from '../kernel/define-agent.js';
import { TOOL_NAMES } from './tool-names.js';
import { TENANT_NAME, TENANT_NAME_RULE } from './tenant-name.js';
import { TRACEPARENT } from '../telemetry/traceparent.js';
import { APPROVAL_POLICIES, MAX_APPROVAL_TIMEOUT_MS, MIN_APPROVAL_TIMEOUT_MS } from '../kernel/approval.js';

export const MAX_TASK_CHARS = 8_000;
const MAX_METADATA_KEYS = 50;
/** Past these, a refusal lists no more: the caller has enough to fix, and the answer stays small. */
const MAX_ISSUES = 100;
const MAX_UNKNOWN_KEYS_LISTED = 10;

/**
 * A character that shows: not whitespace or a separator (Z, White_Space, U+0085), not a control, format,
 * or lone surrogate (Cc, Cf, Cs: NUL, U+200B, U+2060, U+FEFF, U+180E, tags…), not a
 * combining mark alone (M: variation selectors, U+034F), not one of the blank letters and symbols
 * (Hangul fillers U+115F, U+1160, U+3164, U+FFA0; Braille blank U+2800), and not a code point that renders
 * as nothing: default-ignorable (U+2065, U+E0080: reserved, hence not Cf) or unassigned (Cn, U+FFFF).
 */
const VISIBLE_CHARACTER =
  /[^\p{White_Space}\p{Z}\p{Cc}\p{Cf}\p{Cs}\p{M}\p{Cn}\p{Default_Ignorable_Code_Point}\u115F\u1160\u3164\uFFA0\u2800]/u;

export function hasVisibleCharacter(text: string): boolean {
  return VISIBLE_CHARACTER.test(text);
}

export const budgetSchema = z
  .object({
    maxSteps: z.number().int().min(1).max(50),
    maxTokens: z.number().int().min(100).max(5_000_000),
    maxCostUsd: z.number().positive().max(100),
    deadlineMs: z
      .number()
      .int()
      .min(1_000)
      .max(24 * 3_600_000),
  })
  .partial()
  .strict();

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** A task's idempotency key, in the body or as the HTTP API's Idempotency-Key header. */
export const idempotencyKeySchema = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'letters, digits and _.:- only, at most 128');
const BATCH_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const metadataValue = z.union([z.string().max(1_000), z.number(), z.boolean(), z.null()]);

export const taskSchema = z
  .object({
    task: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(MAX_TASK_CHARS, `must be at most ${MAX_TASK_CHARS} characters`)
      // An empty task is already refused as empty.
      .refine(
        (text) => text === '' || hasVisibleCharacter(text),
        'must contain at least one visible character',
      )
      .optional(),
    /** The agent of the fleet that runs the task; absent: the built-in `default` agent. */
    agent: z
      .string()
      .regex(AGENT_NAME, 'must be an agent name: letters, digits, _ and -, at most 64')
      .optional(),
    /** The agent's input, validated against its `input` schema (by the worker, and by producers with a catalog). */
    input: z.record(z.string().max(100), z.unknown()).optional(),
    budget: budgetSchema.optional(),
    tools: z
      .array(z.string().regex(TOOL_NAME, 'must be a tool name'))
      .min(1)
      .refine((names) => new Set(names).size === names.length, 'must not repeat a tool')
      .optional(),
    model: z.string().min(1).max(100).optional(),
    protocol: z.enum(['tools', 'json']).optional(),
    /** `flex`: the provider's slower tier at batch prices, falling back to the default tier near the deadline. */
    serviceTier: z.enum(['default', 'flex']).optional(),
    metadata: z
      // Counted before any entry is validated: a record of thousands of keys costs one Object.keys.
      .unknown()
      .refine(
        (value) =>
          typeof value !== 'object' || value === null || Object.keys(value).length <= MAX_METADATA_KEYS,
        `must have at most ${MAX_METADATA_KEYS} keys`,
      )
      .pipe(z.record(z.string().max(100), metadataValue))
      .superRefine((record, ctx) => {
        // `batch` names the task's batch: its budget, its row in agent_runs.batch_id (64 characters).
        const batch = record['batch'];
        if (batch === undefined || batch === null) return;
        if (typeof batch !== 'string' || !BATCH_ID.test(batch)) {
          ctx.addIssue({
            code: 'custom',
            path: ['batch'],
            message: 'must be a batch id: 1 to 64 letters, digits and _.:- characters',
          });
        }
      })
      .optional(),
    /** `side-effects`: every call of a tool that is not read-only waits for a person's decision (docs/approvals.md). */
    approval: z.enum(APPROVAL_POLICIES).optional(),
    /** How long a call of this task may wait for a decision before it expires; default the agent's, else APPROVAL_TIMEOUT_MS. */
    approvalTimeoutMs: z.number().int().min(MIN_APPROVAL_TIMEOUT_MS).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
    /**
     * Set by the fleet on the task of a child agent (docs/child-agents.md): the parent's job, the call it answers,
     * its depth in the tree, the parent's batch. A producer's task may not carry it.
     */
    parent: z
      .object({
        jobId: z.string().min(1).max(256),
        callKey: z.string().min(1).max(400),
        depth: z.number().int().min(1).max(10),
        batchId: z.string().min(1).max(64).optional(),
        /** When the parent's share of time for its children ends (epoch ms): the child's deadline, wherever it waits. */
        deadlineAt: z.number().int().positive().optional(),
        /** The spend ledger's ticket of what the parent set aside for the child (child-holds.ts): its calls book in it. */
        hold: z
          .string()
          .regex(/^v1\.[0-9a-f-]{36}\.[A-Za-z0-9_-]{1,2048}$/)
          .optional(),
        /** The W3C trace context of the parent's call that started it: the child's spans join the parent's trace. */
        traceparent: z.string().regex(TRACEPARENT, 'must be a W3C traceparent (version 00)').optional(),
      })
      .strict()
      .optional(),
    /** Whom the task runs for: its jobs share TENANT_CONCURRENCY and the tenant's daily caps. */
    tenant: z.string().regex(TENANT_NAME, `must be a tenant name: ${TENANT_NAME_RULE}`).optional(),
    /** The same key enqueued twice gives the same job. */
    idempotencyKey: idempotencyKeySchema.optional(),
  })
  .strict()
  // Run even when a field failed, so a refusal lists every field at once.
  .superRefine(checkTaskOrInput, { when: () => true });

/**
 * A task carries text, an input object, or both. Without an agent it is the default agent's task: its
 * tools are the four built-in ones, and it has text (the default agent takes no input).
 */
function checkTaskOrInput(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  const task = value as Record<string, unknown>;
  if (task['task'] === undefined && task['input'] === undefined) {
    // A named agent most often takes an input object: the issue names `input`, the field its user forgot.
    const agent = typeof task['agent'] === 'string' ? task['agent'] : undefined;
    ctx.addIssue(
      agent === undefined
        ? { code: 'custom', path: ['task'], message: 'required: the text of the task' }
        : {
            code: 'custom',
            path: ['input'],
            message: `required: give agent "${agent}" its input object (or task text, if it takes no input)`,
          },
    );
  }
  if (task['agent'] !== undefined) return;
  if (task['input'] !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['input'],
      message: 'the default agent takes no input: name an agent',
    });
  }
  const tools = task['tools'];
  if (!Array.isArray(tools)) return;
  tools.forEach((name: unknown, i) => {
    if (typeof name === 'string' && !(TOOL_NAMES as readonly string[]).includes(name)) {
      ctx.addIssue({ code: 'custom', path: ['tools', i], message: DEFAULT_TOOLS_MESSAGE });
    }
  });
}

const DEFAULT_TOOLS_MESSAGE = `Invalid option: expected one of ${TOOL_NAMES.map((n) => `"${n}"`).join('|')}`;

export type AgentTask = z.infer<typeof taskSchema>;

/** Why a producer's task may not carry `parent`. */
export const PARENT_ONLY_BY_FLEET = "set by the fleet on a child agent's task only";
export type TaskBudget = z.infer<typeof budgetSchema>;

import type { FieldIssue } from './field-issue.js';

export type { FieldIssue } from './field-issue.js';

export type TaskValidation = { ok: true; task: AgentTask } | { ok: false; issues: FieldIssue[] };

/**
 * Never throws: a task too big or too deep, or one the schema cannot read (a throwing getter, a Proxy), is an
 * issue like any other. The schema reads a plain copy, so the caller's object is read once.
 */
export function validateTask(input: unknown): TaskValidation {
  const snapshot = snapshotJson(input, TASK_JSON_LIMITS);
  if (!snapshot.ok) return { ok: false, issues: [snapshot.issue] };
  const parsed = safeParse(taskSchema, snapshot.value);
  if (parsed.success) return { ok: true, task: parsed.data };
  return { ok: false, issues: toFieldIssues(parsed.error.issues) };
}

/**
 * zod's safeParse, which still throws when reading the value throws: what the snapshot keeps as it is (an
 * instance of a class with a throwing getter) is read by the schema itself.
 */
export function safeParse<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  try {
    return schema.safeParse(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const issue = { code: 'custom' as const, path: [], message: `cannot be read: ${reason}`, input: value };
    return { success: false, error: new z.ZodError([issue]) as z.ZodError<z.output<T>> };
  }
}

export function toFieldIssues(issues: readonly z.core.$ZodIssue[]): FieldIssue[] {
  const fields = issues.slice(0, MAX_ISSUES).map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = issue.path.map(String).join('.');
    if (keys.length > 0) {
      const listed = keys.slice(0, MAX_UNKNOWN_KEYS_LISTED).map((key) => (path ? `${path}.${key}` : key));
      const more = keys.length - listed.length;
      return {
        path: listed.join(', '),
        message: more > 0 ? `unknown field (and ${more} more)` : 'unknown field',
      };
    }
    return { path, message: issue.message };
  });
  if (issues.length > MAX_ISSUES) {
    fields.push({ path: '', message: `and ${issues.length - MAX_ISSUES} more issues` });
  }
  return fields;
}

/** `budget.maxSteps: Too big: expected number to be <=50; tools.0: Invalid option` */
export function formatFieldIssues(issues: readonly FieldIssue[]): string {
  return issues.map((issue) => `${issue.path || '(task)'}: ${issue.message}`).join('; ');
}
