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
  // A promise is only waited for: no signal to hand out, so no AbortController (making one costs tens of µs,
  // and the fleet gate waits this way on every model call).
  if (typeof work !== 'function') return waitFor(work, ms, options);
  const { signal: parent, timedOut } = options;
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
      if (controller.signal.aborted) return reject(controller.signal.reason);
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      work(controller.signal).then(resolve, reject);
    });
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParentAbort);
  }
}

/** `withTimeout` for a promise: the same outcomes, made with a timer and the parent's listener alone. */
function waitFor<T>(work: Promise<T>, ms: number, { signal: parent, timedOut }: TimeoutOptions): Promise<T> {
  if (parent?.aborted) {
    // Not waited for: a rejection of a promise passed in has no one left to tell.
    work.catch(() => undefined);
    return Promise.reject(parent.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined = undefined;
    const onParentAbort = () => settle(() => reject(parent?.reason));
    const settle = (outcome: () => void) => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      parent?.removeEventListener('abort', onParentAbort);
      outcome();
    };
    timer = setTimeout(
      () => settle(() => reject(timedOut ? timedOut() : new Error(`no answer within ${ms} ms`))),
      ms,
    );
    parent?.addEventListener('abort', onParentAbort, { once: true });
    work.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error)),
    );
  });
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
