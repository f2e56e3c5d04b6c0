// An agent's structured output: the zod schema its final answer must satisfy, as the model is shown it (a JSON
// Schema in the prompt and, where the endpoint takes it, a `response_format`), and the check of a reply against
// it. A reply that fails the check goes back to the model as an observation naming each field.
import { jsonrepair } from 'jsonrepair';
import { z } from 'zod';
import type { ResponseFormat } from './messages.js';
import { formatIssues } from './run-tool-call.js';

export type OutputCheck = { ok: true; value: unknown } | { ok: false; issues: string };

/** The name a `response_format` gives the schema (letters, digits, `_` and `-` only). */
const FORMAT_NAME = 'agent_output';

export class StructuredOutput {
  /** The JSON Schema of what the model must write (the schema's input side: defaults may be left out). */
  readonly jsonSchema: Record<string, unknown>;
  /** Strict json_schema when the schema can be strict, json_object otherwise; null when the value is no object. */
  readonly responseFormat: ResponseFormat | null;

  constructor(readonly schema: z.ZodType) {
    this.jsonSchema = outputJsonSchema(schema);
    this.responseFormat = responseFormatFor(this.jsonSchema);
  }

  /** The reply's text as JSON, checked against the schema; tolerant of fences and bent syntax. */
  check(text: string): OutputCheck {
    const json = parseLenient(stripFence(text));
    if (json === undefined) {
      return { ok: false, issues: '(output): the reply is not JSON; it must be one JSON object' };
    }
    const parsed = this.schema.safeParse(json);
    if (parsed.success) return { ok: true, value: parsed.data };
    // Asked for a final answer without tools, models often wrap it the JSON protocol's way: {"answer": {...}}.
    const wrapped = unwrapAnswer(json);
    if (wrapped !== undefined) {
      const inner = this.schema.safeParse(wrapped);
      if (inner.success) return { ok: true, value: inner.data };
    }
    return { ok: false, issues: formatIssues(parsed.error.issues, '(output)') };
  }
}

/** What the model is told when a reply fails the check: the issues with their field paths. */
export function invalidOutputObservation(issues: string): string {
  return `Your final answer is not a valid output: ${issues}. Reply again with the corrected JSON object of the output schema.`;
}

function outputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  // `unrepresentable: 'any'`: a part JSON Schema cannot say (a transform, a date) is left open to the model and
  // still checked by zod.
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const { $schema: _dialect, ...rest } = json;
  // z.int() says "a safe integer" with two 16-digit bounds: tokens in every prompt that tell the model nothing.
  const text = JSON.stringify(rest, (key, value: unknown) =>
    (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) ||
    (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)
      ? undefined
      : value,
  );
  return JSON.parse(text) as Record<string, unknown>;
}

function responseFormatFor(schema: Record<string, unknown>): ResponseFormat | null {
  if (schema.type !== 'object') return null;
  const strict = strictSchema(schema);
  return strict
    ? { type: 'json_schema', json_schema: { name: FORMAT_NAME, schema: strict, strict: true } }
    : { type: 'json_object' };
}

/**
 * The schema as strict mode takes it (every object closed, every property required), or null when it cannot be:
 * an optional property or an open map would be forced into a shape the zod schema does not mean.
 */
export function strictSchema(node: unknown): Record<string, unknown> | null {
  if (Array.isArray(node) || typeof node !== 'object' || node === null) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'default') continue; // strict mode refuses it; zod fills defaults anyway
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      const children: Record<string, unknown> = {};
      for (const [name, child] of Object.entries(value as Record<string, unknown>)) {
        const strict = strictSchema(child);
        if (!strict) return null;
        children[name] = strict;
      }
      out[key] = children;
    } else if (key === 'items' || key === 'not') {
      const strict = strictSchema(value);
      if (!strict) return null;
      out[key] = strict;
    } else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf' || key === 'prefixItems') {
      if (!Array.isArray(value)) return null;
      const members = value.map(strictSchema);
      if (members.some((m) => m === null)) return null;
      out[key] = members;
    } else if (key === 'additionalProperties') {
      if (value !== false) return null;
      out[key] = false;
    } else {
      out[key] = value;
    }
  }
  if (out.type === 'object' || out.properties !== undefined) {
    const names = Object.keys((out.properties as Record<string, unknown> | undefined) ?? {});
    const required = Array.isArray(out.required) ? (out.required as unknown[]) : [];
    if (names.some((name) => !required.includes(name))) return null;
    out.additionalProperties = false;
    out.properties ??= {};
    out.required = names;
  }
  return out;
}

/** X of a reply that is exactly {"answer": X} (X an object, or JSON text of one); undefined otherwise. */
function unwrapAnswer(json: unknown): unknown {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const keys = Object.keys(json);
  if (keys.length !== 1 || keys[0] !== 'answer') return undefined;
  const answer = (json as { answer: unknown }).answer;
  return typeof answer === 'string' ? parseLenient(stripFence(answer)) : answer;
}

/** The content of a ```json fence when the whole reply is one; models add them even when told not to. */
function stripFence(text: string): string {
  const fenced = /^\s*```[\w-]*[ \t]*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return (fenced?.[1] ?? text).trim();
}

function parseLenient(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Not strict JSON; try the repaired text, but only for what looks like JSON (repair makes prose a string).
  }
  if (!/^[{[]/.test(text)) return undefined;
  try {
    return JSON.parse(jsonrepair(text)) as unknown;
  } catch {
    return undefined;
  }
}
