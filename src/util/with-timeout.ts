// The one way to stop waiting for something after a time (and, optionally, when a caller's signal aborts).
// Stopping waiting never cancels a promise; work that takes a signal is told through it.

export interface TimeoutOptions {
  /** The rejection on the timeout; default a plain "no answer within N ms" error. Made when the time is up. */
  timedOut?: () => Error;
  /** Stop waiting when this aborts too (rejecting with its reason), or at once if it already has. */
  signal?: AbortSignal;
}

/**
 * The outcome of `work`, or a rejection after `ms` or when `options.signal` aborts, whichever comes first.
 * `work` is a promise, or a function given a signal that aborts at that moment (with the same reason the
 * returned promise rejects with), so a tool or a query can stop too; waiting ends even if it ignores it.
 */
export async function withTimeout<T>(
  work: Promise<T> | ((signal: AbortSignal) => Promise<T>),
  ms: number,
  options: TimeoutOptions = {},
): Promise<T> {
  const { signal: parent, timedOut } = options;
  // A bare promise without a caller's signal needs no AbortController (nor its event listeners): a timer races
  // it. This is the path of every pooled connection the data database waits for, so it is kept cheap.
  if (typeof work !== 'function' && !parent) return raceTimer(work, ms, timedOut);
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(timedOut ? timedOut() : new Error(`no answer within ${ms} ms`)),
    ms,
  );
  const onParentAbort = () => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onParentAbort, { once: true });
  if (parent?.aborted) controller.abort(parent.reason);
  try {
    return await new Promise<T>((resolve, reject) => {
      if (controller.signal.aborted) {
        // Not waited for: a rejection of a promise passed in has no one left to tell.
        if (typeof work !== 'function') work.catch(() => undefined);
        return reject(controller.signal.reason);
      }
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      (typeof work === 'function' ? work(controller.signal) : work).then(resolve, reject);
    });
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParentAbort);
  }
}

async function raceTimer<T>(work: Promise<T>, ms: number, timedOut: (() => Error) | undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut ? timedOut() : new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    // The race listens to `work` too: a rejection after the time is up is not left unhandled.
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
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
