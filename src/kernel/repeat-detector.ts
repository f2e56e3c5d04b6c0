// A model that repeats the identical action and gets the identical result is stuck. The second time it is
// told so (a nudge in the observation); the third time the run ends instead of burning the budget.

export interface RepeatState {
  signature: string | null;
  /** How many times in a row the signature has repeated (0: it is new). */
  count: number;
}

export type RepeatVerdict = 'fresh' | 'nudge' | 'end';

export const REPEAT_NUDGE =
  '\n[Note: you already made this exact call and got this exact result. Do not repeat it: use the result, try something else, or answer.]';

export function turnSignature(
  calls: readonly { name: string; args: unknown }[],
  outputs: readonly string[],
): string {
  return JSON.stringify([calls.map((call) => [call.name, canonical(call.args)]), outputs]);
}

export function observeRepeat(
  previous: RepeatState,
  signature: string,
): { state: RepeatState; verdict: RepeatVerdict } {
  if (previous.signature !== signature) return { state: { signature, count: 0 }, verdict: 'fresh' };
  const count = previous.count + 1;
  return { state: { signature, count }, verdict: count >= 2 ? 'end' : 'nudge' };
}

/** Key order must not make two identical calls look different. */
function canonical(value: unknown): unknown {
  // Arguments usually come with their keys in order already: then they are their own canonical form.
  if (inOrder(value)) return value;
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * Whether a parsed JSON value already has every object's keys sorted, so that it serializes as its canonical
 * copy would. Anything but JSON's own types (a Date, a class) is left to the copy.
 */
function inOrder(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth > 32) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!inOrder(item, depth + 1)) return false;
    return true;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && !(keys[i - 1]! < keys[i]!)) return false;
    if (!inOrder((value as Record<string, unknown>)[keys[i]!], depth + 1)) return false;
  }
  return true;
}
