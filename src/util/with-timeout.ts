/**
 * The promise's outcome, or a rejection after `ms` (the promise itself is not cancelled): by default a plain
 * "no answer" error, or the one `timedOut` makes.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, timedOut?: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut ? timedOut() : new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** True when `work` resolves within `ms`, false when it is still going; its rejection within `ms` is thrown. */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = work.then(() => true);
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
    done.catch(() => undefined); // a rejection after the time is up has no one left to tell
  }
}
