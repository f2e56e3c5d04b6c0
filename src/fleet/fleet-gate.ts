// The kernel's call gate backed by the fleet's Redis: before each model call, wait for a request slot (MODEL_RPM)
// and book the call's worst case in the spend ledger over the job's scopes (the UTC day, and its batch if it
// belongs to one); after the call, settle with what it cost; on a 429, pause the whole fleet.
import type { Redis } from 'ioredis';
import type { Env } from '../../config/env.js';
import type { CallCost, CallGate, GateDecision } from '../agent/call-gate.js';
import { RateLimiter } from './rate-limiter.js';
import { batchScope, dayScope, SpendLedger, type ReserveResult } from './spend-ledger.js';

export const DEFAULT_LEDGER_TIMEOUT_MS = 10_000;
export const DEFAULT_RATE_LIMIT_PAUSE_MS = 1_000;

const NOTHING: CallCost = { tokens: 0, costUsd: 0 };

export interface FleetGateOptions {
  ledger: SpendLedger;
  limiter?: RateLimiter;
  /** The scopes every call is booked in; a function is asked again before each call (the day may change). */
  scopes: readonly string[] | (() => readonly string[]);
  /** Told of every 429 with the pause it asked for (ms). */
  onRateLimited?: (ms: number) => void;
  /** A ledger that does not answer by then fails the call (retryably) instead of hanging the run. */
  ledgerTimeoutMs?: number;
  /** Pause after a 429 that gave no retry-after. */
  defaultPauseMs?: number;
  /** A fleet-wide pause that could not be set (the call itself goes on). */
  onError?: (error: unknown) => void;
  /** False: the limiter only carries the pause after a 429, no request limit (MODEL_RPM unset). */
  limitRequests?: boolean;
}

export class FleetGate implements CallGate {
  private readonly ledger: SpendLedger;
  private readonly limiter: RateLimiter | undefined;
  private readonly scopes: () => readonly string[];
  private readonly options: FleetGateOptions;

  constructor(options: FleetGateOptions) {
    this.ledger = options.ledger;
    this.limiter = options.limiter;
    const scopes = options.scopes;
    this.scopes = typeof scopes === 'function' ? scopes : () => scopes;
    this.options = options;
  }

  async acquire(worstCase: CallCost, signal: AbortSignal): Promise<GateDecision> {
    const pauseOnly = this.options.limitRequests === false;
    if (this.limiter && !pauseOnly) await this.limiter.acquire(signal);
    for (;;) {
      signal.throwIfAborted();
      // Without MODEL_RPM the limiter only carries the fleet-wide pause after a 429. Its check goes with the
      // booking (one round trip instead of two before every model call); a booking made during a pause is
      // given back before the pause is waited out: it holds budget for a moment, never spends any.
      const booking = this.answered(this.ledger.reserve(this.scopes(), worstCase), signal);
      const paused = (this.limiter && pauseOnly ? this.limiter.pausedFor() : Promise.resolve(0)).catch(
        (error: unknown) => {
          this.giveBack(booking);
          throw error;
        },
      );
      const [pausedMs, result] = await Promise.all([paused, booking]);
      if (!result.ok) return { ok: false, reason: result.reason, message: result.message };
      if (pausedMs === 0) return { ok: true, ticket: result.ticket };
      await this.ledger.settle(result.ticket, NOTHING);
      await this.limiter?.waitWhilePaused(signal);
    }
  }

  async release(ticket: string, actual: CallCost): Promise<void> {
    await this.ledger.settle(ticket, actual);
  }

  rateLimited(retryAfterMs: number | undefined): void {
    const ms = retryAfterMs ?? this.options.defaultPauseMs ?? DEFAULT_RATE_LIMIT_PAUSE_MS;
    this.options.onRateLimited?.(ms);
    this.limiter?.pause(ms).catch((error: unknown) => this.options.onError?.(error));
  }

  /**
   * The ledger's answer, unless the run is aborted or the ledger is too slow first. A reservation that is made
   * after the caller gave up is given back (settled with nothing), since no model call will use it.
   */
  private async answered(pending: Promise<ReserveResult>, signal: AbortSignal): Promise<ReserveResult> {
    const timeoutMs = this.options.ledgerTimeoutMs ?? DEFAULT_LEDGER_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const givenUp = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the spend ledger did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([pending, givenUp]);
    } catch (error) {
      this.giveBack(pending);
      throw error;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  /** A booking no model call will use (the caller gave up, or failed first) is settled with nothing. */
  private giveBack(booking: Promise<ReserveResult>): void {
    booking
      .then((late) => (late.ok ? this.ledger.settle(late.ticket, NOTHING) : undefined))
      .catch(() => undefined);
  }
}

export interface JobGateOptions {
  ledger: SpendLedger;
  limiter?: RateLimiter;
  /** False when the limiter only pauses the fleet after a 429 (MODEL_RPM unset). */
  limitRequests?: boolean;
  /** The job's batch (`metadata.batch`), if any: its budget applies too. */
  batchId?: string;
  /** The clock that picks the UTC day of each call. */
  now?: () => number;
  onRateLimited?: (ms: number) => void;
  ledgerTimeoutMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * The gate of one job: every call is booked in the day of the call (always, so the fleet's daily spend is
 * known even without a daily cap) and in the job's batch, if any.
 */
export function gateForJob(options: JobGateOptions): FleetGate {
  const now = options.now ?? Date.now;
  const batch = options.batchId === undefined ? [] : [batchScope(options.batchId)];
  return new FleetGate({
    ledger: options.ledger,
    limiter: options.limiter,
    scopes: () => [dayScope(now()), ...batch],
    onRateLimited: options.onRateLimited,
    ledgerTimeoutMs: options.ledgerTimeoutMs,
    onError: options.onError,
    limitRequests: options.limitRequests,
  });
}

export type FleetLimitsEnv = Pick<
  Env,
  'QUEUE_PREFIX' | 'FLEET_DAILY_MAX_COST_USD' | 'FLEET_DAILY_MAX_TOKENS' | 'MODEL_RPM'
>;

/**
 * The ledger of the fleet and its limiter, from the environment (§2). The limiter always exists, because it
 * carries the fleet-wide pause after a 429; it limits requests per minute only when MODEL_RPM is set.
 */
export function fleetLimitsFromEnv(
  redis: Redis,
  env: FleetLimitsEnv,
): { ledger: SpendLedger; limiter: RateLimiter; limitRequests: boolean } {
  const ledger = new SpendLedger({
    redis,
    prefix: env.QUEUE_PREFIX,
    dailyCaps: { maxCostUsd: env.FLEET_DAILY_MAX_COST_USD, maxTokens: env.FLEET_DAILY_MAX_TOKENS },
  });
  const limiter = new RateLimiter({ redis, prefix: env.QUEUE_PREFIX, limit: env.MODEL_RPM ?? 1 });
  return { ledger, limiter, limitRequests: env.MODEL_RPM !== undefined };
}
