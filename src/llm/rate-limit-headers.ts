// What an endpoint's `x-ratelimit-*` headers say about its rate limits after a call (OpenAI's names, which
// Azure OpenAI and most compatible servers also send): how many requests and tokens are left in the current
// window, the window's size, and how long until it is whole again. The fleet slows down on them before the
// endpoint answers 429 (src/fleet/provider-rate-limits.ts).
import type { RateLimitState } from '../kernel/chat-model.js';

const FIELDS = {
  limitRequests: 'x-ratelimit-limit-requests',
  limitTokens: 'x-ratelimit-limit-tokens',
  remainingRequests: 'x-ratelimit-remaining-requests',
  remainingTokens: 'x-ratelimit-remaining-tokens',
  resetRequestsMs: 'x-ratelimit-reset-requests',
  resetTokensMs: 'x-ratelimit-reset-tokens',
} as const;

/** Longest reset believed: a header naming hours (a daily limit) is read as one hour. */
const MAX_RESET_MS = 3_600_000;

/** The state the headers give, or undefined when they give none (or only garbage). */
export function rateLimitStateOf(headers: { get(name: string): string | null }): RateLimitState | undefined {
  const state: RateLimitState = {};
  for (const [field, name] of Object.entries(FIELDS) as [keyof RateLimitState, string][]) {
    const raw = headers.get(name);
    if (raw === null) continue;
    const value = field.startsWith('reset') ? durationMs(raw) : count(raw);
    if (value !== undefined) state[field] = value;
  }
  return Object.keys(state).length > 0 ? state : undefined;
}

function count(raw: string): number | undefined {
  const text = raw.trim();
  return /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

/** `6m0s`, `1.5s`, `20ms`, `1h2m3s`, or a bare number of seconds. */
export function durationMs(raw: string): number | undefined {
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(MAX_RESET_MS, Math.ceil(Number(text) * 1000));
  if (text === '' || text.length > 40 || !/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(text)) return undefined;
  const unit = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
  let total = 0;
  for (const [, amount, u] of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/g)) {
    total += Number(amount) * unit[u as keyof typeof unit];
  }
  return Math.min(MAX_RESET_MS, Math.ceil(total));
}
