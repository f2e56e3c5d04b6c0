// The fleet's limit of model requests per window (MODEL_RPM: per 60 s), shared by every worker through Redis.
// A sliding-window log: a sorted set holds the grant time of every request of the last window; a request is
// granted, in one Lua script, only while fewer than `limit` are in it, so no window of `windowMs` anywhere in
// time ever holds more than `limit` grants. The script answers how long until the oldest grant leaves the
// window, and `acquire` sleeps that long (plus a little jitter, so waiters do not all wake at once).
// After a 429, `pause(ms)` sets a key with a PX expiry that every acquire respects: nobody is granted a request
// until it expires. A pause only ever lengthens a running one.
// Times are the Redis server's clock, one clock for the whole fleet.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../queue/redis.js';
import { sleep as abortableSleep } from '../kernel/sleep.js';
import { LuaScript } from './lua-script.js';

export const DEFAULT_RATE_WINDOW_MS = 60_000;

export interface RateLimiterOptions {
  redis: RedisClient;
  /** QUEUE_PREFIX. */
  prefix?: string;
  /** Requests granted per window (MODEL_RPM). */
  limit: number;
  /** 60 s for MODEL_RPM; shorter in tests. */
  windowMs?: number;
  /** What is limited, so several limits can share a prefix. */
  name?: string;
  /** Longest sleep between two tries (a waiter re-reads the limit at least this often). */
  maxPollMs?: number;
  /** Upper bound of the random delay added to every wait. */
  jitterMs?: number;
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
}

/** A wait that cannot end before the caller's deadline: given up at once rather than slept through. */
export class WaitPastDeadline extends Error {
  constructor(
    /** What makes the caller wait, for the message: "MODEL_RPM", "the fleet's pause after a 429". */
    readonly what: string,
    readonly waitMs: number,
  ) {
    super(`${what} would make the call wait ${Math.ceil(waitMs)} ms, past its deadline`);
  }
}

/**
 * What a model call waited for, for the metrics: MODEL_RPM's window, MODEL_TPM's, or the fleet's pause (after a
 * 429, or asked by the endpoint's x-ratelimit headers).
 */
export type RateWaitReason = 'rpm' | 'tpm' | 'pause';

export type TryAcquireResult =
  { ok: true; grantedAt: number } | { ok: false; waitMs: number; paused: boolean };

// KEYS: window log, pause key. ARGV: limit, window ms, member. Reply: {1, now} | {0, wait ms, paused 0|1}.
const TRY_ACQUIRE = LuaScript.fromFiles(
  new URL('./redis-now.lua', import.meta.url),
  new URL('./rate-acquire.lua', import.meta.url),
);

// KEYS: pause key. ARGV: ms. Never shortens a longer pause already running.
const PAUSE_SCRIPT = LuaScript.fromFiles(new URL('./rate-pause.lua', import.meta.url));

const PAUSE_NAME = "the fleet's pause after a 429";

export class RateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  private readonly redis: RedisClient;
  private readonly logKey: string;
  /** While this key lives the fleet is paused; the spend ledger's booking checks it in the same script. */
  readonly pauseKey: string;
  private readonly maxPollMs: number;
  private readonly jitterMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Until when (this process's clock) this process knows the fleet to be paused: see `pausedHere`. */
  private knownPausedUntil = 0;

  constructor(options: RateLimiterOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 1)
      throw new RangeError('limit must be an integer >= 1');
    this.limit = options.limit;
    this.windowMs = options.windowMs ?? DEFAULT_RATE_WINDOW_MS;
    if (!Number.isInteger(this.windowMs) || this.windowMs < 1) throw new RangeError('windowMs must be >= 1');
    this.redis = options.redis;
    // The spend ledger's hash tag: its booking script checks the pause key too (one slot on a Redis Cluster).
    const base = `${options.prefix ?? 'agentfleet'}:{fleet-ledger}:rate:${options.name ?? 'model'}`;
    this.logKey = `${base}:log`;
    this.pauseKey = `${base}:pause`;
    this.maxPollMs = options.maxPollMs ?? 1_000;
    this.jitterMs = options.jitterMs ?? 25;
    this.sleep = options.sleep ?? abortableSleep;
  }

  /** One try: a grant, or how long to wait before the next one can succeed. */
  async tryAcquire(): Promise<TryAcquireResult> {
    const reply = await TRY_ACQUIRE.run(
      this.redis,
      [this.logKey, this.pauseKey],
      [this.limit, this.windowMs, randomUUID()],
    );
    if (!Array.isArray(reply)) throw new Error(`rate limiter: unexpected reply ${JSON.stringify(reply)}`);
    if (reply[0] === 1) return { ok: true, grantedAt: Number(reply[1]) };
    return { ok: false, waitMs: Number(reply[1]), paused: reply[2] === 1 };
  }

  /**
   * Waits until a request is granted; rejects with the signal's reason when it aborts first.
   * Returns the grant time (Redis clock) and how long it waited.
   */
  /**
   * Waits for a request slot. With a `deadline` (ms since epoch, this process's clock), a wait the window or
   * the pause says cannot end before it throws WaitPastDeadline at once (the script's wait is exact: the oldest
   * grant leaves the window then, the pause ends then).
   */
  async acquire(
    signal?: AbortSignal,
    deadline?: number,
  ): Promise<{ grantedAt: number; waitedMs: number; waitedFor?: RateWaitReason }> {
    const started = Date.now();
    /** What the last sleep waited for; absent when the first try was granted. */
    let waitedFor: RateWaitReason | undefined;
    for (;;) {
      signal?.throwIfAborted();
      const answer = await this.tryAcquire();
      // A grant that arrives after the abort is still a grant: the caller gave up, so it is not used.
      signal?.throwIfAborted();
      if (answer.ok)
        return {
          grantedAt: answer.grantedAt,
          waitedMs: Date.now() - started,
          ...(waitedFor ? { waitedFor } : {}),
        };
      if (deadline !== undefined && Date.now() + answer.waitMs > deadline) {
        throw new WaitPastDeadline(answer.paused ? PAUSE_NAME : 'MODEL_RPM', answer.waitMs);
      }
      const wait = Math.min(answer.waitMs, this.maxPollMs) + Math.floor(Math.random() * (this.jitterMs + 1));
      waitedFor = answer.paused ? 'pause' : 'rpm';
      await this.sleep(wait, signal);
    }
  }

  /** Without a request limit, only the fleet-wide pause after a 429 applies: wait it out. */
  async waitWhilePaused(signal?: AbortSignal, deadline?: number): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const left = await this.pausedFor();
      if (left === 0) return;
      if (deadline !== undefined && Date.now() + left > deadline)
        throw new WaitPastDeadline(PAUSE_NAME, left);
      await this.sleep(
        Math.min(left, this.maxPollMs) + Math.floor(Math.random() * (this.jitterMs + 1)),
        signal,
      );
    }
  }

  /** Nobody in the fleet is granted a request for `ms` (or longer, if a longer pause is running). */
  async pause(ms: number): Promise<void> {
    const duration = Math.ceil(ms);
    if (!Number.isFinite(duration) || duration <= 0) return;
    this.notePaused(duration);
    await PAUSE_SCRIPT.run(this.redis, [this.pauseKey], [duration]);
  }

  /** Remembers a pause this process learned of (its own 429, or a booking that found the fleet paused). */
  notePaused(ms: number): void {
    if (ms > 0) this.knownPausedUntil = Math.max(this.knownPausedUntil, Date.now() + ms);
  }

  /**
   * Whether this process knows of a running pause, without asking Redis. A pause another process sets is known
   * here from the next booking that meets it; until then calls that do not wait for their booking go on.
   */
  get pausedHere(): boolean {
    return Date.now() < this.knownPausedUntil;
  }

  /** How long the running pause has left, in ms (0: none). */
  async pausedFor(): Promise<number> {
    return Math.max(0, await this.redis.pttl(this.pauseKey));
  }

  /** The Redis keys of the limiter (for operators and tests). */
  keys(): string[] {
    return [this.logKey, this.pauseKey];
  }
}
