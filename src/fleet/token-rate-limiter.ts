// The fleet's limit of model tokens per window (MODEL_TPM: per 60 s, per model), shared by every worker through
// Redis. A sliding-window log like the request limiter's (rate-limiter.ts), weighted by tokens: a sorted set
// holds the grant time of every call of the last window and a hash its tokens. A call is granted, in one Lua
// script, only while the tokens of the window plus its worst case stay within the limit; after the call its
// entry is settled to what it really used, which frees the rest for later calls. Since an entry only ever
// shrinks (unless the endpoint reports more than the worst case, which is then counted), no window of
// `windowMs` anywhere in time holds more granted tokens than the limit.
// A worker that dies between grant and settle leaves its worst case in the window: it leaves with the window.
// Times are the Redis server's clock, one clock for the whole fleet.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { sleep as abortableSleep } from '../agent/sleep.js';
import { LuaScript } from './lua-script.js';
import { DEFAULT_RATE_WINDOW_MS } from './rate-limiter.js';

export interface TokenRateLimiterOptions {
  redis: Redis;
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
  /** Longest sleep between two tries. */
  maxPollMs?: number;
  jitterMs?: number;
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

export type TokenGrant = { ok: true; grant: string } | { ok: false; waitMs: number };

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// KEYS: window log (id -> grant ms), amounts (id -> tokens), the fleet's pause key. ARGV: limit, window ms, id,
// tokens. Reply: {1} granted | {0, wait ms}: the pause left, or the time until enough tokens leave the window.
const TRY_GRANT = new LuaScript(`${NOW}
local paused = redis.call('PTTL', KEYS[3])
if paused > 0 then return {0, paused} end
local limit, window, tokens = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window)
if #gone > 0 then
  for _, id in ipairs(gone) do redis.call('HDEL', KEYS[2], id) end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
end
local used = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do used = used + tonumber(v) end
if used + tokens <= limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window + 1000)
  redis.call('PEXPIRE', KEYS[2], window + 1000)
  return {1}
end
local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local freed = 0
for i = 1, #entries, 2 do
  freed = freed + tonumber(redis.call('HGET', KEYS[2], entries[i]) or '0')
  if used - freed + tokens <= limit then
    local wait = tonumber(entries[i + 1]) + window - now
    if wait < 1 then wait = 1 end
    return {0, wait}
  end
end
return {0, window}
`);

// KEYS: window log, amounts. ARGV: id, actual tokens. An entry that already left the window stays gone.
const SETTLE = new LuaScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
return 1
`);

export class TokenRateLimiter {
  readonly model: string;
  readonly limit: number;
  readonly windowMs: number;
  private readonly redis: Redis;
  private readonly logKey: string;
  private readonly amountsKey: string;
  private readonly pauseKey: string;
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
    this.maxPollMs = options.maxPollMs ?? 1_000;
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
      [this.limit, this.windowMs, grant, amount],
    );
    if (!Array.isArray(reply)) throw new Error(`token limiter: unexpected reply ${JSON.stringify(reply)}`);
    return reply[0] === 1 ? { ok: true, grant } : { ok: false, waitMs: Number(reply[1]) };
  }

  /** Waits until `tokens` are granted; rejects with the signal's reason when it aborts first. */
  async acquire(tokens: number, signal?: AbortSignal): Promise<{ grant: string; waitedMs: number }> {
    const started = Date.now();
    for (;;) {
      signal?.throwIfAborted();
      const answer = await this.tryGrant(tokens);
      if (answer.ok) {
        // The caller gave up meanwhile: the grant is given back, not used.
        if (signal?.aborted) {
          await this.settle(answer.grant, 0).catch(() => undefined);
          signal.throwIfAborted();
        }
        return { grant: answer.grant, waitedMs: Date.now() - started };
      }
      const wait = Math.min(answer.waitMs, this.maxPollMs) + Math.floor(Math.random() * (this.jitterMs + 1));
      await this.sleep(wait, signal);
    }
  }

  /** The call used `tokens` (0: it was never made): its entry in the window shrinks (or grows) to that. */
  async settle(grant: string, tokens: number): Promise<void> {
    const amount = Math.max(0, Math.ceil(tokens));
    await SETTLE.run(this.redis, [this.logKey, this.amountsKey], [grant, amount]);
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
