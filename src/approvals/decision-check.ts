// What a decision must be before it is recorded, each refusal naming its field: `decision` approve or reject,
// `reason` a bounded text, `arguments` (an edit) only with approve and a JSON object the tool's schema accepts
// (`arguments.to`), `by` someone. Decisions arrive from HTTP bodies and the command line: the input is unknown.
// The edit is checked here against the JSON Schema stored with the approval (what the model was shown), so the
// approver hears at once; the worker checks it again against the tool's own schema before the call runs.
import { z } from 'zod';
import type { FieldIssue } from '../queue/field-issue.js';
import { snapshotJson, TASK_JSON_LIMITS } from '../queue/json-structure.js';
import { safeParse, toFieldIssues } from '../queue/task-schema.js';

export const REASON_MAX_CHARS = 2_000;
/** Edited arguments as JSON text: tool calls are small, and the row keeps them with the decision. */
export const EDIT_MAX_CHARS = 100_000;

export interface CheckedDecision {
  decision: 'approve' | 'reject';
  reason?: string | undefined;
  arguments?: Record<string, unknown> | undefined;
  by: string;
}

const decisionSchema = z
  .object({
    decision: z.enum(['approve', 'reject'], { error: 'must be approve or reject' }),
    reason: z
      .string({ error: 'must be a string' })
      .max(REASON_MAX_CHARS, `must be at most ${REASON_MAX_CHARS.toLocaleString('en-US')} characters`)
      .optional(),
    arguments: z.unknown().optional(),
    by: z
      .string({ error: 'required: the name of who decides' })
      .trim()
      .min(1, 'required: the name of who decides'),
  })
  .superRefine((input, ctx) => {
    if (input.arguments === undefined) return;
    if (input.decision !== 'approve') {
      ctx.addIssue({
        code: 'custom',
        path: ['arguments'],
        message: 'only an approval can edit the arguments',
      });
      return;
    }
    const why = notJsonObject(input.arguments);
    if (why) ctx.addIssue({ code: 'custom', path: ['arguments'], message: why });
  });

/** The decision's own fields checked (not yet the edit against the tool's schema). */
export function checkDecision(
  input: unknown,
): { ok: true; decision: CheckedDecision } | { ok: false; issues: FieldIssue[] } {
  const parsed = safeParse(decisionSchema, input);
  if (!parsed.success) return { ok: false, issues: toFieldIssues(parsed.error.issues) };
  const { arguments: edited, ...rest } = parsed.data;
  return {
    ok: true,
    decision: { ...rest, ...(edited === undefined ? {} : { arguments: edited as Record<string, unknown> }) },
  };
}

/** The edit against the tool's JSON Schema; none (or one zod cannot read) is left to the worker's check. */
export function checkEdit(schema: Record<string, unknown> | null, edited: unknown): FieldIssue[] {
  const check = schema === null ? null : validatorOf(schema);
  if (check === null) return [];
  const parsed = safeParse(check, edited);
  if (parsed.success) return [];
  return toFieldIssues(
    parsed.error.issues.map((issue) => ({ ...issue, path: ['arguments', ...issue.path] })),
  );
}

/** Why a value is not a JSON object of bounded size, or null when it is one. */
function notJsonObject(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be a JSON object';
  const snapshot = snapshotJson(value, TASK_JSON_LIMITS);
  if (!snapshot.ok) return snapshot.issue.message;
  if (!isJson(snapshot.value))
    return 'must be a JSON object (strings, numbers, booleans, null, arrays, objects)';
  if (JSON.stringify(snapshot.value).length > EDIT_MAX_CHARS)
    return `must be at most ${EDIT_MAX_CHARS.toLocaleString('en-US')} characters as JSON`;
  return null;
}

function isJson(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJson);
  if (typeof value !== 'object') return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && Object.values(value).every(isJson);
}

// zod's reading of a JSON Schema, kept by its text: a tool's schema is the same for all its calls.
const validators = new Map<string, z.ZodType | null>();
const MAX_VALIDATORS = 256;

function validatorOf(schema: Record<string, unknown>): z.ZodType | null {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (validator === undefined) {
    try {
      validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      validator = null;
    }
    if (validators.size >= MAX_VALIDATORS) validators.clear();
    validators.set(key, validator);
  }
  return validator;
}
