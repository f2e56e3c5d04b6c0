// The one owner of hiding secrets in whatever the fleet shows: log lines (src/logging/logger.ts), one-line
// start-up failures on stderr, the board's job view. Values under keys that name a secret are replaced at
// any depth; every string is scrubbed of credentials (URLs, auth headers, `password=…`); errors become plain
// objects with their message, stack, cause chain and AggregateError members scrubbed the same way, and a
// driver error's SQL reduced to its shape (src/logging/sql-shape.ts).
import { isSecretKey } from './secret-key.js';
import { REDACTED, scrubText } from './scrub-text.js';
import { carriesSql, sqlShape } from './sql-shape.js';

export { isSecretKey } from './secret-key.js';
export { REDACTED, URL_PASSWORD_MASK, redactUrl, scrubText } from './scrub-text.js';

export interface RedactLimits {
  /** Deeper values are replaced whole: a bound on work, and nothing unexamined is shown. */
  maxDepth: number;
  /** Objects and arrays visited before the rest is cut: a bound for an accidentally logged client. */
  maxNodes: number;
}

export const DEFAULT_LIMITS: RedactLimits = { maxDepth: 64, maxNodes: 100_000 };
export const TOO_MANY = '[truncated]';
export const CIRCULAR = '[circular]';

/** Redis commands whose arguments are credentials (ioredis puts the command on a ReplyError). */
const CREDENTIAL_COMMANDS = /^(auth|hello)$/i;

interface Walk {
  limits: RedactLimits;
  nodes: number;
  ancestors: Set<object>;
}

/**
 * A copy of `value`, safe to show: the input is left alone. Numbers, booleans and null under a secret key are
 * kept (`sessionTtlMs: 3000` is a setting, not a secret); strings, objects and arrays under one are not.
 */
export function redactValue(value: unknown, limits: RedactLimits = DEFAULT_LIMITS): unknown {
  return walk(value, 0, { limits, nodes: 0, ancestors: new Set() });
}

/** An error as a plain object: type, message, stack, own fields, `cause` and AggregateError `errors`. */
export function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    type: error.constructor?.name ?? error.name,
    message: error.message,
    stack: error.stack,
  };
  for (const key of Object.keys(error)) {
    if (!Object.hasOwn(fields, key)) fields[key] = readField(error, key);
  }
  // The statement with its values formatted in: those values are run data, so only its shape is shown.
  if (carriesSql(error)) fields['sql'] = sqlShape(error.sql);
  const cause = 'cause' in error ? readField(error, 'cause') : undefined;
  if (cause !== undefined) fields['cause'] = cause;
  // pino's own name for them, so log queries keep working.
  const { errors } = error as { errors?: unknown };
  if (Array.isArray(errors)) {
    fields['aggregateErrors'] = errors;
    delete fields['errors'];
  }
  return fields;
}

function walk(value: unknown, depth: number, state: Walk): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= state.limits.maxDepth) return REDACTED;
  if (++state.nodes > state.limits.maxNodes) return TOO_MANY;
  if (state.ancestors.has(value)) return CIRCULAR;
  state.ancestors.add(value);
  try {
    return walkObject(value, depth, state);
  } finally {
    state.ancestors.delete(value);
  }
}

function walkObject(value: object, depth: number, state: Walk): unknown {
  if (value instanceof Error) return copyFields(errorFields(value), depth, state);
  if (Array.isArray(value)) return value.map((item) => walk(item, depth + 1, state));
  const shown = shownForm(value);
  if (shown !== value) return walk(shown, depth + 1, state);
  const copy = copyFields(value as Record<string, unknown>, depth, state);
  if (typeof copy['name'] === 'string' && CREDENTIAL_COMMANDS.test(copy['name']) && 'args' in copy) {
    copy['args'] = REDACTED;
  }
  return copy;
}

function copyFields(source: Record<string, unknown>, depth: number, state: Walk): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    const item = readField(source, key);
    const hidden =
      isSecretKey(key) && item !== null && (typeof item === 'string' || typeof item === 'object');
    // defineProperty: a `__proto__` key in job data stays a plain field of the copy.
    Object.defineProperty(copy, key, {
      value: hidden ? REDACTED : walk(item, depth + 1, state),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** What JSON would show of `value`: its toJSON (Date, URL, Buffer), an HTTP message's useful part. */
function shownForm(value: object): unknown {
  const candidate = value as Record<string, unknown>;
  if (candidate['method'] && candidate['headers'] && candidate['socket']) {
    return { method: candidate['method'], url: candidate['url'], headers: candidate['headers'] };
  }
  if (typeof candidate['setHeader'] === 'function' && typeof candidate['getHeaders'] === 'function') {
    return { statusCode: candidate['statusCode'], headers: (candidate['getHeaders'] as () => unknown)() };
  }
  if (typeof candidate['toJSON'] === 'function') {
    try {
      return (candidate['toJSON'] as () => unknown)();
    } catch {
      return '[unserializable]';
    }
  }
  return value;
}

function readField(source: object, key: string): unknown {
  try {
    return (source as Record<string, unknown>)[key];
  } catch {
    // A throwing getter must not take the log line (or the page) down with it.
    return '[unreadable]';
  }
}
