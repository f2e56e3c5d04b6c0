// withTimeout: the outcome, or a rejection on the time limit or the caller's abort; work given a signal
// learns of it through that signal.
import { describe, expect, it } from 'vitest';
import { settlesWithin, withTimeout } from '../src/util/with-timeout.js';

const never = () => new Promise<never>(() => {});

describe('withTimeout', () => {
  it('passes the outcome through, value or rejection', async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000)).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error('boom')), 1_000)).rejects.toThrow('boom');
    await expect(withTimeout(async () => 'fn', 1_000)).resolves.toBe('fn');
  });

  it('rejects on the time limit: a plain error, or the one timedOut makes when the time is up', async () => {
    await expect(withTimeout(never(), 20)).rejects.toThrow('no answer within 20 ms');
    class Late extends Error {}
    let made = 0;
    const pending = withTimeout(never(), 20, { timedOut: () => (made++, new Late()) });
    expect(made).toBe(0);
    await expect(pending).rejects.toBeInstanceOf(Late);
    expect(made).toBe(1);
  });

  it('aborts the signal it gives the work, with the reason it rejects with', async () => {
    class Late extends Error {}
    let seen: AbortSignal | undefined;
    const pending = withTimeout((signal) => ((seen = signal), never()), 20, { timedOut: () => new Late() });
    await expect(pending).rejects.toBeInstanceOf(Late);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(Late);
  });

  it("stops waiting when the caller's signal aborts, with its reason, even if the work ignores its signal", async () => {
    const caller = new AbortController();
    let seen: AbortSignal | undefined;
    const pending = withTimeout((signal) => ((seen = signal), never()), 60_000, { signal: caller.signal });
    const reason = new Error('cancelled');
    setTimeout(() => caller.abort(reason), 10);
    const started = performance.now();
    await expect(pending).rejects.toBe(reason);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(seen?.reason).toBe(reason);
  });

  it('never starts work for a caller that already aborted', async () => {
    const caller = new AbortController();
    caller.abort(new Error('gone'));
    let started = false;
    await expect(
      withTimeout(async () => ((started = true), 1), 1_000, { signal: caller.signal }),
    ).rejects.toThrow('gone');
    expect(started).toBe(false);
    await expect(withTimeout(Promise.resolve(1), 1_000, { signal: caller.signal })).rejects.toThrow('gone');
  });

  it('a work function that throws at once rejects, and no listener or timer is left behind', async () => {
    const caller = new AbortController();
    await expect(
      withTimeout(
        () => {
          throw new Error('sync');
        },
        60_000,
        { signal: caller.signal },
      ),
    ).rejects.toThrow('sync');
    // A later abort of the caller reaches no one (no unhandled rejection, nothing aborted twice).
    caller.abort();
  });
});

describe('settlesWithin', () => {
  it('tells a promise that settled in time from one still going', async () => {
    await expect(settlesWithin(Promise.resolve(), 1_000)).resolves.toBe(true);
    await expect(settlesWithin(never(), 20)).resolves.toBe(false);
    await expect(settlesWithin(Promise.reject(new Error('x')), 1_000)).rejects.toThrow('x');
  });
});
