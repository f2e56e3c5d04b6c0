// The fleet's limit of model tokens per window (MODEL_TPM: per 60 s, per model), shared by every worker through
// Redis. A log like the request limiter's (rate-limiter.ts), weighted by tokens: a hash holds the tokens of every
// call that still counts, a sorted set when it stops counting. A call is granted, in one Lua script, only while
// the tokens that count plus its worst case stay within the limit. While the call is in flight it counts (the
// endpoint receives it at some moment between the grant and the reply); once it settles, its entry shrinks to
// what it really used and counts for one more window after the reply, then leaves. So for any window of
// `windowMs` as the endpoint sees it, the calls it received in that window were all counted when the last of
// them was granted: no such window ever holds more tokens than the limit (unless a call uses more than its
// worst case, which is then counted in full).
// A worker that dies between grant and settle leaves its worst case counting for `maxCallMs` plus a window.
// Times are the Redis server's clock, one clock for the whole fleet.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../queue/redis.js';
import { sleep as abortableSleep } from '../kernel/sleep.js';
import { LuaScript } from './lua-script.js';
import { DEFAULT_RATE_WINDOW_MS, WaitPastDeadline, type RateWaitReason } from './rate-limiter.js';

export interface TokenRateLimiterOptions {
  redis: RedisClient;
  /** QUEUE_PREFIX. */
  prefix?: string;
  /** The model whose tokens are limited (the window is per model). */
  model: string;
  /** Tokens granted per window (MODEL_TPM). */
  limit: number;
  /** 60 s for MODEL_TPM; shorter in tests. */
  windowMs?: number;
  /** The fleet's pause key (RateLimiter.pauseKey): while it lives, nothing is granted. */
  pauseKey?: string;
  /** How long a call in flight may last (a crashed worker's call counts this long, plus a window). */
  maxCallMs?: number;
  /** Longest sleep between two tries. */
  maxPollMs?: number;
  jitterMs?: number;
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

/** Longer than any model call (LLM_TIMEOUT_MS defaults to 60 s). */
export const DEFAULT_MAX_CALL_MS = 120_000;

/** `paused`: the wait is the fleet's pause (its end is known), not tokens that may stop counting sooner. */
export type TokenGrant = { ok: true; grant: string } | { ok: false; waitMs: number; paused: boolean };

// KEYS: log (id -> when it stops counting, ms), amounts (id -> tokens), the fleet's pause key. ARGV: limit,
// window ms, id, tokens, longest call ms. Reply: {1} granted | {0, wait ms, 1}: the pause left | {0, wait ms}: until
// enough tokens stop counting (an entry in flight: until its longest possible end; callers poll sooner).
const TRY_GRANT = LuaScript.fromFiles(
  new URL('./redis-now.lua', import.meta.url),
  new URL('./token-grant.lua', import.meta.url),
);

// KEYS: log, amounts. ARGV: id, actual tokens, window ms. The entry counts what the call used, for one more
// window from now; one that already stopped counting stays gone.
const SETTLE = LuaScript.fromFiles(
  new URL('./redis-now.lua', import.meta.url),
  new URL('./token-settle.lua', import.meta.url),
);

export class TokenRateLimiter {
  readonly model: string;
  readonly limit: number;
  readonly windowMs: number;
  private readonly redis: RedisClient;
  private readonly logKey: string;
  private readonly amountsKey: string;
  private readonly pauseKey: string;
  private readonly maxCallMs: number;
  private readonly maxPollMs: number;
  private readonly jitterMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;

  constructor(options: TokenRateLimiterOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new RangeError('limit must be an integer >= 1');
    this.model = options.model;
    this.limit = options.limit;
    this.windowMs = options.windowMs ?? DEFAULT_RATE_WINDOW_MS;
    if (!Number.isInteger(this.windowMs) || this.windowMs < 1) throw new RangeError('windowMs must be >= 1');
    this.redis = options.redis;
    // The model name goes into the key as it is, inside a base64url so no character of it can break the key.
    const model = Buffer.from(options.model).toString('base64url');
    const base = `${options.prefix ?? 'agentfleet'}:{fleet-ledger}:tpm:${model}`;
    this.logKey = `${base}:log`;
    this.amountsKey = `${base}:tok`;
    this.pauseKey = options.pauseKey ?? `${base}:pause`;
    this.maxCallMs = options.maxCallMs ?? DEFAULT_MAX_CALL_MS;
    this.maxPollMs = options.maxPollMs ?? 250;
    this.jitterMs = options.jitterMs ?? 25;
    this.sleep = options.sleep ?? abortableSleep;
  }

  /** Whether a call of this worst case can ever be granted (it fits in an empty window). */
  fits(tokens: number): boolean {
    return Math.ceil(tokens) <= this.limit;
  }

  /** One try: a grant of `tokens`, or how long until enough tokens leave the window. */
  async tryGrant(tokens: number): Promise<TokenGrant> {
    const amount = Math.ceil(tokens);
    if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`not a token count: ${tokens}`);
    if (amount > this.limit) throw new RangeError(`${amount} tokens never fit a window of ${this.limit}`);
    const grant = randomUUID();
    const reply = await TRY_GRANT.run(
      this.redis,
      [this.logKey, this.amountsKey, this.pauseKey],
      [this.limit, this.windowMs, grant, amount, this.maxCallMs],
    );
    if (!Array.isArray(reply)) throw new Error(`token limiter: unexpected reply ${JSON.stringify(reply)}`);
    return reply[0] === 1
      ? { ok: true, grant }
      : { ok: false, waitMs: Number(reply[1]), paused: reply[2] === 1 };
  }

  /**
   * Waits until `tokens` fit in the window; rejects with the signal's reason when it aborts first. With a `deadline` (ms since epoch, this process's clock), never
   * sleeps past it: a call still not granted then throws WaitPastDeadline. (The script's wait for an entry in
   * flight is only an upper bound, since the call may settle sooner, so a long one is not given up up front,
   * except for the fleet's pause, whose end is known.)
   */
  async acquire(
    tokens: number,
    signal?: AbortSignal,
    deadline?: number,
  ): Promise<{ grant: string; waitedMs: number; waitedFor?: RateWaitReason }> {
    const started = Date.now();
    /** What the last sleep waited for; absent when the first try was granted. */
    let waitedFor: RateWaitReason | undefined;
    for (;;) {
      signal?.throwIfAborted();
      const answer = await this.tryGrant(tokens);
      if (answer.ok) {
        // The caller gave up meanwhile: the grant is given back, not used.
        if (signal?.aborted) {
          await this.settle(answer.grant, 0).catch(() => undefined);
          signal.throwIfAborted();
        }
        return { grant: answer.grant, waitedMs: Date.now() - started, ...(waitedFor ? { waitedFor } : {}) };
      }
      let wait = Math.min(answer.waitMs, this.maxPollMs) + Math.floor(Math.random() * (this.jitterMs + 1));
      if (deadline !== undefined) {
        const left = deadline - Date.now();
        if (left <= 0 || (answer.paused && answer.waitMs > left)) {
          throw new WaitPastDeadline(
            answer.paused ? "the fleet's pause after a 429" : 'MODEL_TPM',
            answer.waitMs,
          );
        }
        wait = Math.min(wait, left);
      }
      waitedFor = answer.paused ? 'pause' : 'tpm';
      await this.sleep(wait, signal);
    }
  }

  /** The call used `tokens` (0: it was never made): its entry in the window shrinks (or grows) to that. */
  async settle(grant: string, tokens: number): Promise<void> {
    const amount = Math.max(0, Math.ceil(tokens));
    await SETTLE.run(this.redis, [this.logKey, this.amountsKey], [grant, amount, this.windowMs]);
  }

  /** The Redis keys of the limiter (for operators and tests). */
  keys(): string[] {
    return [this.logKey, this.amountsKey];
  }
}

/** MODEL_TPM as parsed: one limit for every model, or limits by model name with an optional default (`*`). */
export type TokenLimits = { all: number } | { byModel: Record<string, number>; others?: number };

export function tokenLimitFor(limits: TokenLimits | undefined, model: string): number | undefined {
  if (!limits) return undefined;
  if ('all' in limits) return limits.all;
  return limits.byModel[model] ?? limits.others;
}

/** One limiter per model, made on first use; none for a model without a limit. */
export class TokenRateLimiters {
  private readonly made = new Map<string, TokenRateLimiter>();

  constructor(
    private readonly options: Omit<TokenRateLimiterOptions, 'model' | 'limit'> & { limits?: TokenLimits },
  ) {}

  for(model: string): TokenRateLimiter | undefined {
    const limit = tokenLimitFor(this.options.limits, model);
    if (limit === undefined) return undefined;
    let limiter = this.made.get(model);
    if (!limiter) {
      limiter = new TokenRateLimiter({ ...this.options, model, limit });
      this.made.set(model, limiter);
    }
    return limiter;
  }
}
