// Bounds on the shape of a task or a batch, checked before the schema sees it: the schema's cost grows with
// every key (an 8 MB body of 700,000 keys cost the API seconds of event loop before it was refused), and a
// deep one could exhaust the stack. Two passes, one concept:
//   scanJsonText     over the raw bytes of a JSON body, before JSON.parse: counts members and depth, O(bytes)
//   snapshotJson     over a value handed to the library: copies it into plain data, once, reading every getter
//                    and Proxy trap exactly once, so a hostile one becomes an issue instead of an exception and
//                    the schema never reads the caller's object twice
import type { FieldIssue } from './field-issue.js';

export interface JsonLimits {
  /** Nesting of objects and arrays; a task needs 3. */
  maxDepth: number;
  /** Object keys plus array items, over the whole value. */
  maxMembers: number;
  /** Keys of any one object: the schemas' largest object, metadata, allows 50. */
  maxObjectKeys: number;
}

export const MAX_OBJECT_KEYS = 100;

/** One task: its schema allows about 70 members (50 of them metadata); nesting 3. */
export const TASK_JSON_LIMITS: JsonLimits = {
  maxDepth: 32,
  maxMembers: 10_000,
  maxObjectKeys: MAX_OBJECT_KEYS,
};

export class JsonStructureError extends Error {
  /** body-parser's fields: an error with a status and a type is answered as a client error. */
  readonly status = 400;
  readonly type = 'entity.structure.exceeded';
  constructor(readonly issue: FieldIssue) {
    super(issue.path ? `${issue.path}: ${issue.message}` : issue.message);
  }
}

function tooManyMembers(limits: JsonLimits): string {
  return `has more than ${limits.maxMembers} keys and array items`;
}

function tooManyKeys(limits: JsonLimits): string {
  return `has an object of more than ${limits.maxObjectKeys} keys`;
}

function tooDeep(limits: JsonLimits): string {
  return `nests objects and arrays deeper than ${limits.maxDepth} levels`;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const SPACE = 0x20;

/**
 * The issue with a JSON text's shape, or null. Counts `:` (a key) and the items of arrays outside strings;
 * malformed JSON is left for JSON.parse to refuse. UTF-8 multi-byte characters never contain these bytes.
 */
export function scanJsonText(bytes: Uint8Array, limits: JsonLimits): FieldIssue | null {
  let depth = 0;
  let members = 0;
  let inString = false;
  // Per open array, whether it has an item yet: `[]` has none, `[1]` one, `[1,2]` two.
  const arrayHasItem: boolean[] = [];
  const isArray: boolean[] = [];
  // Per open object, its keys so far.
  const objectKeys: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte <= SPACE) continue;
    const top = isArray.length - 1;
    if (top >= 0 && isArray[top] && !arrayHasItem[top] && byte !== CLOSE_ARRAY) {
      arrayHasItem[top] = true;
      members++;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > limits.maxDepth) return { path: '', message: tooDeep(limits) };
      isArray.push(byte === OPEN_ARRAY);
      arrayHasItem.push(false);
      objectKeys.push(0);
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
      isArray.pop();
      arrayHasItem.pop();
      objectKeys.pop();
    } else if (byte === COLON && top >= 0) {
      members++;
      if (++objectKeys[top]! > limits.maxObjectKeys) return { path: '', message: tooManyKeys(limits) };
    } else if (byte === COMMA && top >= 0 && isArray[top]) members++;
    if (members > limits.maxMembers) return { path: '', message: tooManyMembers(limits) };
  }
  return null;
}

export type JsonSnapshot = { ok: true; value: unknown } | { ok: false; issue: FieldIssue };

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A plain copy of `value` (arrays and objects with their own enumerable string keys), or the first issue: a
 * shape over the limits, or a property that cannot be read (a throwing getter, a Proxy trap), with its path.
 * Values that are neither arrays nor plain objects (a Date, a Map, a function) are kept as they are, for the
 * schema to refuse with its own message.
 */
export function snapshotJson(value: unknown, limits: JsonLimits): JsonSnapshot {
  // One path stack, pushed and popped, instead of a path per member: the copy of a 5,000-task batch stays
  // cheaper than parsing it. When anything throws, the stack says where.
  const path: string[] = [];
  let members = 0;
  const refuse = (message: string): never => {
    throw new JsonStructureError({ path: path.join('.'), message });
  };
  const copy = (item: unknown): unknown => {
    if (item === null || typeof item !== 'object') return item;
    if (path.length >= limits.maxDepth) refuse(tooDeep(limits));
    if (Array.isArray(item)) {
      const length: unknown = item.length;
      if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0)
        refuse('has a bad length');
      members += length as number;
      if (members > limits.maxMembers) refuse(tooManyMembers(limits));
      const out: unknown[] = [];
      for (let i = 0; i < (length as number); i++) {
        path.push(String(i));
        out.push(copy(item[i]));
        path.pop();
      }
      return out;
    }
    const prototype: unknown = Object.getPrototypeOf(item);
    if (prototype !== Object.prototype && prototype !== null) return item;
    const keys = Object.keys(item);
    if (keys.length > limits.maxObjectKeys) refuse(tooManyKeys(limits));
    members += keys.length;
    if (members > limits.maxMembers) refuse(tooManyMembers(limits));
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      path.push(key);
      const copied = copy((item as Record<string, unknown>)[key]);
      // A `__proto__` key stays a key (for the schema to refuse), never the copy's prototype.
      if (key === '__proto__') {
        Object.defineProperty(out, key, {
          value: copied,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else out[key] = copied;
      path.pop();
    }
    return out;
  };
  try {
    return { ok: true, value: copy(value) };
  } catch (error) {
    if (error instanceof JsonStructureError) return { ok: false, issue: error.issue };
    // A throwing getter, a Proxy trap, a revoked Proxy: an issue at the field being read.
    return { ok: false, issue: { path: path.join('.'), message: `cannot be read: ${errorText(error)}` } };
  }
}
