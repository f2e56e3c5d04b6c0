// The signal a run's tools get: the run's abort or its deadline, whichever comes first, and nothing left behind
// once disposed.
import { describe, expect, it } from 'vitest';
import { deadlineSignal } from '../src/kernel/deadline-signal.js';

const listeners = (signal: AbortSignal) => {
  let count = 0;
  const original = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
    count++;
    original(...args);
  }) as AbortSignal['addEventListener'];
  signal.removeEventListener = ((...args: Parameters<AbortSignal['removeEventListener']>) => {
    count--;
    remove(...args);
  }) as AbortSignal['removeEventListener'];
  return () => count;
};

describe('deadlineSignal', () => {
  it('aborts with the run’s reason when the run is aborted', () => {
    const run = new AbortController();
    const { signal, dispose } = deadlineSignal(run.signal, 60_000);
    const reason = new Error('shutdown');
    run.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    dispose();
  });

  it('aborts with a TimeoutError when the deadline passes first', async () => {
    const run = new AbortController();
    const { signal, dispose } = deadlineSignal(run.signal, 20);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
    expect(run.signal.aborted).toBe(false);
    dispose();
  });

  it('is aborted at once when the run already is, and a deadline already past aborts it on the next tick', async () => {
    const run = new AbortController();
    run.abort(new Error('gone'));
    expect(deadlineSignal(run.signal, 60_000).signal.aborted).toBe(true);
    const late = deadlineSignal(new AbortController().signal, -5);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(late.signal.aborted).toBe(true);
  });

  it('dispose leaves no listener on the run’s signal and no timer to fire', async () => {
    const run = new AbortController();
    const count = listeners(run.signal);
    const made = Array.from({ length: 100 }, () => deadlineSignal(run.signal, 10));
    expect(count()).toBe(100);
    made.forEach((d) => d.dispose());
    expect(count()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(made.every((d) => !d.signal.aborted)).toBe(true);
  });
});
