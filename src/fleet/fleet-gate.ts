// The kernel's call gate backed by the fleet's Redis: a request slot (MODEL_RPM) and a booking in the spend
// ledger before each model call, a settle after, a fleet-wide pause on a 429; one round trip per step, and no
// waiting for bookings no cap can refuse. The trade-offs: docs/limits.md (one round trip per step, one script per
// turn).
import type { RedisClient } from '../queue/redis.js';
import type { Env } from '../../config/env.js';
import type { CallCost, CallGate, GateDecision, GateWaitLimits } from '../kernel/call-gate.js';
import { RateLimiter, WaitPastDeadline, type RateWaitReason } from './rate-limiter.js';
import { batchScope, dayScope, holdScope, tenantDayScope } from './spend-scopes.js';
import { decodeTicket } from './spend-tickets.js';
import { SpendLedger, type BookOptions, type Booking } from './spend-ledger.js';
import { TokenRateLimiters, type TokenLimits, type TokenRateLimiter } from './token-rate-limiter.js';
import { withTimeout } from '../util/with-timeout.js';

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
  /** A fleet-wide pause that could not be set, or a booking not waited for that failed (the call goes on). */
  onError?: (error: unknown) => void;
  /** False: the limiter only carries the pause after a 429, no request limit (MODEL_RPM unset). */
  limitRequests?: boolean;
  /** The model's tokens per minute (MODEL_TPM): each call's worst case waits for room in the window. */
  tokens?: TokenRateLimiter;
  /** Told of every wait a call made before it could go (for the metrics): what it waited for, and how long. */
  onWaited?: (reason: RateWaitReason, ms: number) => void;
}

interface PendingSettle {
  ticket: string;
  actual: CallCost;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The settle waiting, if any, goes first in the booking's script; the fleet's pause is checked in it. */
function bookOptions(settle: PendingSettle | null, pauseKey: string | undefined): BookOptions {
  return {
    ...(settle ? { settleFirst: { ticket: settle.ticket, actual: settle.actual } } : {}),
    ...(pauseKey !== undefined ? { pauseKey } : {}),
  };
}

export class FleetGate implements CallGate {
  private readonly ledger: SpendLedger;
  private readonly limiter: RateLimiter | undefined;
  private readonly scopes: () => readonly string[];
  private readonly options: FleetGateOptions;
  private pending: PendingSettle | null = null;
  /** Scope lists (joined) a booking of this job found without a cap. */
  private readonly uncapped = new Set<string>();
  /** A booking that was not waited for failed: wait for every booking from now on. */
  private waitForBookings = false;
  /**
   * Tickets of calls made without waiting for their booking, until their settle: whether the booking was answered
   * (false: it failed, and may not have run). At most one is unanswered at a time.
   */
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private unanswered = 0;
  /** The token window's grant of each ticket, settled to the call's actual tokens with it. */
  private readonly tokenGrants = new Map<string, string>();

  constructor(options: FleetGateOptions) {
    this.ledger = options.ledger;
    this.limiter = options.limiter;
    const scopes = options.scopes;
    this.scopes = typeof scopes === 'function' ? scopes : () => scopes;
    this.options = options;
  }

  async acquire(
    worstCase: CallCost,
    signal: AbortSignal,
    limits: GateWaitLimits = {},
  ): Promise<GateDecision> {
    // On this process's clock: the rate limiters compare their waits with it.
    const deadline = limits.timeLeftMs === undefined ? undefined : Date.now() + limits.timeLeftMs;
    try {
      return await this.acquireBefore(worstCase, signal, deadline);
    } catch (error) {
      if (!(error instanceof WaitPastDeadline)) throw error;
      return { ok: false, reason: 'deadline', message: `The run's deadline comes first: ${error.message}` };
    }
  }

  private async acquireBefore(
    worstCase: CallCost,
    signal: AbortSignal,
    deadline: number | undefined,
  ): Promise<GateDecision> {
    const tokens = this.options.tokens;
    if (!tokens) return this.acquireBooking(worstCase, signal, deadline);
    if (!tokens.fits(worstCase.tokens)) {
      const message =
        `MODEL_TPM allows ${tokens.limit.toLocaleString('en-US')} tokens per minute for ${tokens.model}: ` +
        `a call that may need ${Math.ceil(worstCase.tokens).toLocaleString('en-US')} tokens never fits`;
      return { ok: false, reason: 'token_budget', message };
    }
    const { grant, waitedMs, waitedFor } = await tokens.acquire(worstCase.tokens, signal, deadline);
    if (waitedFor) this.options.onWaited?.(waitedFor, waitedMs);
    let decision: GateDecision;
    try {
      decision = await this.acquireBooking(worstCase, signal, deadline);
    } catch (error) {
      void tokens.settle(grant, 0).catch(() => undefined);
      throw error;
    }
    if (decision.ok) this.tokenGrants.set(decision.ticket, grant);
    else void tokens.settle(grant, 0).catch(() => undefined);
    return decision;
  }

  private async acquireBooking(
    worstCase: CallCost,
    signal: AbortSignal,
    deadline: number | undefined,
  ): Promise<GateDecision> {
    const pauseOnly = this.options.limitRequests === false;
    // With MODEL_RPM the limiter's own script respects the pause; without, the booking checks it.
    if (this.limiter && !pauseOnly) {
      const { waitedMs, waitedFor } = await this.limiter.acquire(signal, deadline);
      if (waitedFor) this.options.onWaited?.(waitedFor, waitedMs);
    }
    const pauseKey = this.limiter && pauseOnly ? this.limiter.pauseKey : undefined;
    for (;;) {
      signal.throwIfAborted();
      const scopes = this.scopes();
      const scopesKey = scopes.join('\n');
      // With MODEL_RPM every call waits for its request slot anyway.
      const limitsRequests = this.limiter !== undefined && !pauseOnly;
      if (!limitsRequests && this.mayGoAhead(scopesKey)) {
        return this.goAhead(scopes, scopesKey, worstCase, pauseKey);
      }
      const settle = this.takePending(scopes);
      const booking = this.ledger.book(scopes, worstCase, bookOptions(settle, pauseKey));
      // A booking that failed may not have run its script: the settle then goes alone (settling is idempotent).
      if (settle)
        booking.then(
          () => settle.resolve(),
          () => this.sendSettle(settle),
        );
      const { reservation, pausedMs, capped } = await this.answered(booking, signal);
      if (!reservation) {
        this.limiter?.notePaused(pausedMs);
        if (this.limiter) {
          const pausedAt = Date.now();
          await this.limiter.waitWhilePaused(signal, deadline);
          this.options.onWaited?.('pause', Date.now() - pausedAt);
        }
        continue;
      }
      if (capped === false) this.uncapped.add(scopesKey);
      if (!reservation.ok) return { ok: false, reason: reservation.reason, message: reservation.message };
      return { ok: true, ticket: reservation.ticket };
    }
  }

  /**
   * Not while a booking that was not waited for is still unanswered: a ledger that stops answering (Redis down, the
   * commands queued) is then met by a waited booking and its timeout, and a cap set meanwhile is passed by at most
   * one call of the job.
   */
  private mayGoAhead(scopesKey: string): boolean {
    return (
      !this.waitForBookings &&
      this.unanswered === 0 &&
      this.uncapped.has(scopesKey) &&
      !this.limiter?.pausedHere
    );
  }

  /** The call goes out now; its booking (and the settle waiting, if any) follows in one script. */
  private goAhead(
    scopes: readonly string[],
    scopesKey: string,
    worstCase: CallCost,
    pauseKey: string | undefined,
  ): GateDecision {
    const settle = this.takePending(scopes);
    let made;
    try {
      made = this.ledger.bookInFlight(scopes, worstCase, bookOptions(settle, pauseKey));
    } catch (error) {
      // Refused before anything was sent (an amount out of range): no call, and the settle goes alone.
      if (settle) this.sendSettle(settle);
      throw error;
    }
    this.unanswered++;
    const answered = made.booking.then(
      ({ pausedMs, capped }) => {
        settle?.resolve();
        this.limiter?.notePaused(pausedMs);
        if (capped) this.uncapped.delete(scopesKey);
        return true;
      },
      (error: unknown) => {
        if (settle) this.sendSettle(settle);
        this.waitForBookings = true;
        this.options.onError?.(error);
        return false;
      },
    );
    void answered.then(() => this.unanswered--);
    this.inFlight.set(made.ticket, answered);
    return { ok: true, ticket: made.ticket };
  }

  /** Resolves once the settle is in the ledger: with the next booking if one comes in this turn, else alone. */
  release(ticket: string, actual: CallCost): Promise<void> {
    const grant = this.tokenGrants.get(ticket);
    if (grant === undefined || !this.options.tokens) return this.releaseBooking(ticket, actual);
    this.tokenGrants.delete(ticket);
    return Promise.all([
      this.options.tokens.settle(grant, actual.tokens),
      this.releaseBooking(ticket, actual),
    ]).then(() => undefined);
  }

  private releaseBooking(ticket: string, actual: CallCost): Promise<void> {
    const answered = this.inFlight.get(ticket);
    if (answered) {
      this.inFlight.delete(ticket);
      // Never before its booking (a booking re-sent after a lost script cache could come after the settle), and
      // recorded as spent if the booking failed, since the call was made all the same.
      return answered.then((booked) =>
        booked
          ? this.queueSettle(ticket, actual)
          : this.ledger.settleOrRecord(ticket, actual).then(() => undefined),
      );
    }
    return this.queueSettle(ticket, actual);
  }

  private queueSettle(ticket: string, actual: CallCost): Promise<void> {
    this.sendPending();
    return new Promise((resolve, reject) => {
      this.pending = { ticket, actual, resolve, reject };
      setImmediate(() => this.sendPending());
    });
  }

  /**
   * The waiting settle, if it covers exactly these scopes. Otherwise (the UTC day has changed since its booking)
   * it goes now, alone, so that it still comes before the booking in the ledger: the scopes they share (the
   * batch's) see the room it frees.
   */
  private takePending(scopes: readonly string[]): PendingSettle | null {
    const pending = this.pending;
    if (!pending) return null;
    const booked = decodeTicket(pending.ticket).scopes;
    const asked = [...new Set(scopes)];
    if (booked.length !== asked.length || booked.some((scope, i) => scope !== asked[i])) {
      this.sendPending();
      return null;
    }
    this.pending = null;
    return pending;
  }

  private sendPending(): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.sendSettle(pending);
  }

  private sendSettle(pending: PendingSettle): void {
    this.ledger.settle(pending.ticket, pending.actual).then(() => pending.resolve(), pending.reject);
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
  private async answered(pending: Promise<Booking>, signal: AbortSignal): Promise<Booking> {
    const timeoutMs = this.options.ledgerTimeoutMs ?? DEFAULT_LEDGER_TIMEOUT_MS;
    try {
      return await withTimeout(pending, timeoutMs, {
        signal,
        timedOut: () => new Error(`the spend ledger did not answer within ${timeoutMs} ms`),
      });
    } catch (error) {
      this.giveBack(pending);
      throw error;
    }
  }

  /** A booking no model call will use (the caller gave up, or failed first) is settled with nothing. */
  private giveBack(booking: Promise<Booking>): void {
    booking
      .then(({ reservation: late }) => (late?.ok ? this.ledger.settle(late.ticket, NOTHING) : undefined))
      .catch(() => undefined);
  }
}

export interface JobGateOptions extends JobScopeOwner {
  ledger: SpendLedger;
  limiter?: RateLimiter;
  /** False when the limiter only pauses the fleet after a 429 (MODEL_RPM unset). */
  limitRequests?: boolean;
  /** The job's model's tokens per minute (MODEL_TPM), if it has a limit. */
  tokens?: TokenRateLimiter;
  /** The clock that picks the UTC day of each call. */
  now?: () => number;
  onRateLimited?: (ms: number) => void;
  ledgerTimeoutMs?: number;
  onError?: (error: unknown) => void;
  onWaited?: (reason: RateWaitReason, ms: number) => void;
}

/** Whose spend a job's calls count in: its batch, its tenant, or the hold its parent set aside for it. */
export interface JobScopeOwner {
  batchId?: string;
  /** The job's tenant (the task's `tenant`), if any: its daily caps apply too. */
  tenant?: string;
  /** The ticket of the hold a child agent's parent took for it (child-holds.ts), if any. */
  hold?: string;
}

/**
 * The scopes of one job's calls at a moment: the day of the call (always, so the fleet's daily spend is known
 * even without a daily cap), its tenant's day if the job has a tenant (likewise), and its batch, if any. A child
 * agent with a hold books in the hold alone: the hold already counts in its parent's scopes, once for the tree.
 */
export function jobScopes(owner: JobScopeOwner): (at: number) => string[] {
  if (owner.hold !== undefined) {
    const hold = [holdScope(decodeTicket(owner.hold).id)];
    return () => hold;
  }
  const batch = owner.batchId === undefined ? [] : [batchScope(owner.batchId)];
  const tenant = owner.tenant;
  if (tenant !== undefined) tenantDayScope(tenant, 0); // a bad name throws here, not at the first call
  return (at) =>
    tenant === undefined ? [dayScope(at), ...batch] : [dayScope(at), tenantDayScope(tenant, at), ...batch];
}

/** The gate of one job: every call is booked in the job's scopes (jobScopes) at the time of the call. */
export function gateForJob(options: JobGateOptions): FleetGate {
  const now = options.now ?? Date.now;
  const scopesAt = jobScopes(options);
  return new FleetGate({
    ledger: options.ledger,
    limiter: options.limiter,
    tokens: options.tokens,
    scopes: () => scopesAt(now()),
    onRateLimited: options.onRateLimited,
    ledgerTimeoutMs: options.ledgerTimeoutMs,
    onError: options.onError,
    limitRequests: options.limitRequests,
    onWaited: options.onWaited,
  });
}

export type FleetLimitsEnv = Pick<
  Env,
  | 'QUEUE_PREFIX'
  | 'FLEET_DAILY_MAX_COST_USD'
  | 'FLEET_DAILY_MAX_TOKENS'
  | 'MODEL_RPM'
  | 'MODEL_TPM'
  | 'TENANT_DAILY_MAX_COST_USD'
  | 'TENANT_DAILY_MAX_TOKENS'
>;

/**
 * The ledger of the fleet and its limiter, from the environment (docs/configuration.md). The limiter always
 * exists, because it carries the fleet-wide pause after a 429; it limits requests per minute only when MODEL_RPM
 * is set.
 */
export function fleetLimitsFromEnv(
  redis: RedisClient,
  env: FleetLimitsEnv,
): { ledger: SpendLedger; limiter: RateLimiter; limitRequests: boolean; tokens: TokenRateLimiters } {
  const ledger = new SpendLedger({
    redis,
    prefix: env.QUEUE_PREFIX,
    dailyCaps: { maxCostUsd: env.FLEET_DAILY_MAX_COST_USD, maxTokens: env.FLEET_DAILY_MAX_TOKENS },
    tenantDailyCaps: { maxCostUsd: env.TENANT_DAILY_MAX_COST_USD, maxTokens: env.TENANT_DAILY_MAX_TOKENS },
  });
  const limiter = new RateLimiter({ redis, prefix: env.QUEUE_PREFIX, limit: env.MODEL_RPM ?? 1 });
  const limits: TokenLimits | undefined = env.MODEL_TPM;
  // A pause of the fleet (after a 429, or asked by the endpoint's headers) holds token grants too.
  const tokens = new TokenRateLimiters({
    redis,
    prefix: env.QUEUE_PREFIX,
    limits,
    pauseKey: limiter.pauseKey,
  });
  return { ledger, limiter, limitRequests: env.MODEL_RPM !== undefined, tokens };
}
