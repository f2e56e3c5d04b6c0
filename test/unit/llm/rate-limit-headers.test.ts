// The endpoint's x-ratelimit-* headers as the fleet reads them, and the pause they ask for.
import { describe, expect, it } from 'vitest';
import { headerPauseMs, MAX_HEADER_PAUSE_MS } from '../../../src/fleet/provider-rate-limits.js';
import { durationMs, rateLimitStateOf } from '../../../src/llm/rate-limit-headers.js';

describe('x-ratelimit headers', () => {
  it('reads counts and OpenAI-style durations, and ignores garbage', () => {
    expect(durationMs('6m0s')).toBe(360_000);
    expect(durationMs('1.5s')).toBe(1_500);
    expect(durationMs('20ms')).toBe(20);
    expect(durationMs('1h2m3s')).toBe(3_600_000); // capped at an hour
    expect(durationMs('2')).toBe(2_000);
    expect(durationMs('soon')).toBeUndefined();
    const headers = new Headers({
      'x-ratelimit-limit-tokens': '30000',
      'x-ratelimit-remaining-tokens': '1200',
      'x-ratelimit-reset-tokens': '57.6s',
      'x-ratelimit-remaining-requests': 'many',
    });
    expect(rateLimitStateOf(headers)).toEqual({
      limitTokens: 30_000,
      remainingTokens: 1_200,
      resetTokensMs: 57_600,
    });
    expect(rateLimitStateOf(new Headers())).toBeUndefined();
  });

  it('pauses only when the next call would not fit, as long as the missing tokens take to come back', () => {
    const state = { limitTokens: 10_000, remainingTokens: 1_000, resetTokensMs: 9_000 };
    expect(headerPauseMs(state, 800)).toBe(0);
    // 1,000 tokens missing out of 9,000 that come back in 9 s: 1 s.
    expect(headerPauseMs(state, 2_000)).toBe(1_000);
    // Without the limit, until the reset.
    expect(headerPauseMs({ remainingTokens: 10, resetTokensMs: 2_500 }, 100)).toBe(2_500);
    expect(headerPauseMs({ remainingRequests: 0, resetRequestsMs: 700 }, 0)).toBe(700);
    expect(headerPauseMs({ remainingRequests: 0, resetRequestsMs: 3_600_000 }, 0)).toBe(MAX_HEADER_PAUSE_MS);
  });
});
