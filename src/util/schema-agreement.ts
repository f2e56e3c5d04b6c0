// Compile-time checks that a zod schema and the TypeScript type it describes agree: `agree<Same<A, B>>()` fails
// the type check when a field is added to one and not the other, or typed differently. Nothing runs.

/** The declared keys of T, without a loose object's index signature. */
export type Known<T> = { [K in keyof T as string extends K ? never : K]: T[K] };

/** Equal types with equal keys: an optional field added to one side only is a difference too. */
export type Same<A, B> = [A] extends [B]
  ? [B] extends [A]
    ? [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false
    : false
  : false;

export const agree = <T extends true>(): T | undefined => undefined;
