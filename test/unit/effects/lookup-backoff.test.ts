// The effect sweeper's per-row wait after failed lookups: doubling, capped, bounded in rows, forgotten on success.
import { describe, expect, it } from 'vitest';
import { LookupBackoff } from '../../../src/effects/lookup-backoff.js';

describe('LookupBackoff', () => {
  it('doubles the wait with each failure up to the cap, and forgets a row that was answered', () => {
    let now = 0;
    const backoff = new LookupBackoff({ baseMs: 1_000, maxMs: 5_000, now: () => now });
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      backoff.failed('a');
      const started = now;
      while (backoff.waiting().includes('a')) now += 100;
      waits.push(now - started);
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    backoff.failed('a');
    backoff.forget('a');
    expect(backoff.waiting()).toEqual([]);
  });

  it('remembers at most maxRows rows, forgetting the ones that failed longest ago', () => {
    const backoff = new LookupBackoff({ maxRows: 2, now: () => 0 });
    backoff.failed('a');
    backoff.failed('b');
    backoff.failed('a');
    backoff.failed('c');
    expect(backoff.waiting().sort()).toEqual(['a', 'c']);
  });
});
