// The scripted server's emulation of a provider's rate limits, as OpenAI documents them: a bucket of tokens and
// one of requests per minute, refilled steadily; a request whose prompt plus `max_tokens` the token bucket
// cannot cover (or that finds no request left) is answered 429 with `retry-after-ms`; an admitted one holds its
// prompt plus `max_tokens` until its reply, then what it used; every reply carries
// `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and `x-ratelimit-reset-*` (`1.5s`, `20ms`).
// Tests see what a fleet that ignores the headers meets (429s), and what one that honours them avoids.

export interface ScriptedRateLimits {
  tokensPerMinute?: number;
  requestsPerMinute?: number;
  /** The refill period, 60 s by default (shorter in tests). */
  windowMs?: number;
}

class Bucket {
  private level: number;
  private at: number;

  constructor(
    readonly capacity: number,
    private readonly windowMs: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }

  private refill(now: number): void {
    this.level = Math.min(this.capacity, this.level + ((now - this.at) * this.capacity) / this.windowMs);
    this.at = now;
  }

  /** 0 when `amount` is there now, else how long until it is. */
  waitFor(amount: number, now: number): number {
    this.refill(now);
    if (amount <= this.level) return 0;
    return Math.ceil(((amount - this.level) * this.windowMs) / this.capacity);
  }

  take(amount: number, now: number): void {
    this.refill(now);
    this.level -= amount;
  }

  remaining(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.level));
  }

  resetMs(now: number): number {
    this.refill(now);
    return Math.ceil(((this.capacity - Math.max(0, this.level)) * this.windowMs) / this.capacity);
  }
}

const duration = (ms: number) => (ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(3).replace(/\.?0+$/, '')}s`);

export class ProviderRateLimits {
  private readonly tokens: Bucket | undefined;
  private readonly requests: Bucket | undefined;
  /** Requests answered 429 because a bucket was short. */
  refused = 0;

  constructor(limits: ScriptedRateLimits, now = Date.now()) {
    const window = limits.windowMs ?? 60_000;
    if (limits.tokensPerMinute) this.tokens = new Bucket(limits.tokensPerMinute, window, now);
    if (limits.requestsPerMinute) this.requests = new Bucket(limits.requestsPerMinute, window, now);
  }

  /** Admits a request (taking one request) or says how long to wait; `need`: its prompt plus max_tokens. */
  admit(need: number, now = Date.now()): { ok: true } | { ok: false; retryAfterMs: number } {
    const wait = Math.max(this.tokens?.waitFor(need, now) ?? 0, this.requests?.waitFor(1, now) ?? 0);
    if (wait > 0) {
      this.refused++;
      return { ok: false, retryAfterMs: wait };
    }
    this.requests?.take(1, now);
    this.tokens?.take(need, now);
    return { ok: true };
  }

  /** An admitted request's `need` is replaced by what its reply really used. */
  settle(need: number, used: number, now = Date.now()): void {
    this.tokens?.take(used - need, now);
  }

  headers(now = Date.now()): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, bucket] of [
      ['tokens', this.tokens],
      ['requests', this.requests],
    ] as const) {
      if (!bucket) continue;
      out[`x-ratelimit-limit-${name}`] = String(bucket.capacity);
      out[`x-ratelimit-remaining-${name}`] = String(bucket.remaining(now));
      out[`x-ratelimit-reset-${name}`] = duration(bucket.resetMs(now));
    }
    return out;
  }
}
