// Editing arguments that the console shows masked. Like everything it shows, a call's arguments go through the
// redaction rules (a value under a key that names a secret, a credential inside a text), and the approve form's
// textarea holds that masked form. Sent back unchanged it is no edit: the call runs as asked, secrets and all.
// Changed, it must not keep a mask, or the call would run with `[redacted]` where the secret was.
import { isDeepStrictEqual } from 'node:util';
import { REDACTED, redactValue } from '../logging/redact.js';

/** Deeper edits are refused: a bound on the walks below, far past any tool's arguments. */
const MAX_DEPTH = 32;

/** The arguments as the console shows them and the textarea holds them. */
export function shownArguments(args: unknown): unknown {
  return redactValue(args);
}

export type EditReading =
  | { kind: 'unchanged' }
  | { kind: 'edited'; arguments: Record<string, unknown> }
  | { kind: 'invalid'; path: string; message: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The textarea's JSON checked against the arguments it was shown from. */
export function readEdit(text: string, original: unknown): EditReading {
  let edited: unknown;
  try {
    edited = JSON.parse(text);
  } catch (error) {
    return { kind: 'invalid', path: 'arguments', message: `must be JSON (${(error as Error).message})` };
  }
  if (!isRecord(edited))
    return { kind: 'invalid', path: 'arguments', message: 'must be a JSON object ({…})' };
  if (depthOf(edited, 0) > MAX_DEPTH)
    return { kind: 'invalid', path: 'arguments', message: `must nest at most ${MAX_DEPTH} levels` };
  const shown = shownArguments(original);
  if (isDeepStrictEqual(edited, shown)) return { kind: 'unchanged' };
  const masks = new Set<string>();
  collectMasks(original, shown, masks, 0);
  const path = maskedPath(edited, 'arguments', masks);
  if (path !== null) {
    const message = `still holds a value the console hides (${REDACTED}): give it in full, or approve without editing`;
    return { kind: 'invalid', path, message };
  }
  return { kind: 'edited', arguments: edited };
}

function depthOf(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return depth;
  let deepest = depth;
  for (const item of Object.values(value)) deepest = Math.max(deepest, depthOf(item, depth + 1));
  return deepest;
}

/** Every shown string that is not what the arguments hold there: a masked value, whole or in part. */
function collectMasks(original: unknown, shown: unknown, into: Set<string>, depth: number): void {
  if (typeof shown === 'string') {
    if (shown !== original) into.add(shown);
    return;
  }
  if (depth > MAX_DEPTH || typeof shown !== 'object' || shown === null) return;
  if (typeof original !== 'object' || original === null) return;
  for (const [key, item] of Object.entries(shown)) {
    collectMasks((original as Record<string, unknown>)[key], item, into, depth + 1);
  }
}

/** Where the edit still holds a mask, as `arguments.to` or `arguments.cc[1]`; null when nowhere. */
function maskedPath(value: unknown, path: string, masks: ReadonlySet<string>): string | null {
  if (typeof value === 'string') return masks.has(value) || value.includes(REDACTED) ? path : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const found = maskedPath(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, masks);
    if (found !== null) return found;
  }
  return null;
}
