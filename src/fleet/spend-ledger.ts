// The fleet's spend ledger in Redis: budgets per UTC day, batch and tenant day, shared by every worker. A call's
// worst case is reserved in all its scopes in one Lua script, in integer micro-dollars, and settled after; a
// crashed worker's reservation expires as spent. Why each choice: docs/limits.md (the spend ledger).
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../queue/redis.js';
import type { BudgetStopReason } from '../kernel/budget.js';
import type { CallCost } from '../kernel/call-gate.js';
import { capTokens, MICRO_USD_PER_USD, microUsdDown, microUsdUp, tokensUp } from './spend-money.js';
import { refusalDetail, refusalMessage, type RefusalDetail } from './spend-refusals.js';
import { assertScope } from './spend-scopes.js';
import { LedgerBatcher } from './spend-batch.js';
import { READ } from './spend-scripts.js';
import { decodeTicket, encodeTicket, sameScopes } from './spend-tickets.js';

export const DEFAULT_RESERVATION_TTL_MS = 10 * 60_000;
export const DEFAULT_DAY_SCOPE_TTL_MS = 3 * 86_400_000;
export const DEFAULT_BATCH_SCOPE_TTL_MS = 30 * 86_400_000;

export interface SpendCaps {
  maxCostUsd?: number;
  maxTokens?: number;
}

export type ReserveResult =
  | { ok: true; ticket: string; expiresAt: number }
  | { ok: false; reason: BudgetStopReason; scope: string; message: string; detail: RefusalDetail };

/**
 * Per scope of the ticket: `settled` now, `late` (settled after it expired), `none` (already settled, or never
 * booked), `recorded` (never booked, its actual added all the same: settleOrRecord).
 */
export type SettleStatus = 'settled' | 'late' | 'none' | 'recorded';

export interface BookOptions {
  /**
   * A reservation over the same scopes to settle first, in the same script: the settle of one model call and the
   * booking of the next cost one round trip.
   */
  settleFirst?: { ticket: string; actual: CallCost };
  /** The fleet's pause key (rate-limiter.ts): while it lives nothing is booked, and the booking says how long. */
  pauseKey?: string;
  /** How long the reservation lives unsettled (ms); absent, the ledger's reservation TTL. */
  ttlMs?: number;
  /**
   * The reservation's id (a UUID), for a booking that must be the same whoever sends it again (a child's hold,
   * taken again by a parent resumed after a crash); absent, a random one.
   */
  id?: string;
}

/** A call made without waiting for its booking (`bookInFlight`): its ticket now, the ledger's answer later. */
export interface InFlightBooking {
  ticket: string;
  booking: Promise<Booking>;
}

export interface Booking {
  /** Null when the fleet is paused. */
  reservation: ReserveResult | null;
  /** What is left of the fleet's pause (0: none, or not asked). */
  pausedMs: number;
  /** The settle asked for first, per scope; null when none was asked. */
  settled: Record<string, SettleStatus> | null;
  /** Whether some scope of the booking has a cap (stored or configured); null when the fleet was paused. */
  capped: boolean | null;
}

export interface ScopeSpend {
  usedUsd: number;
  usedTokens: number;
  /** Live (unexpired) reservations of calls in flight. */
  reservedUsd: number;
  reservedTokens: number;
  /** null: unlimited. */
  capUsd: number | null;
  capTokens: number | null;
  /** The same figures in exact micro-dollars. */
  usedMicroUsd: number;
  reservedMicroUsd: number;
  capMicroUsd: number | null;
  liveReservations: number;
}

export interface SpendLedgerOptions {
  redis: RedisClient;
  /** QUEUE_PREFIX: several fleets may share one Redis. */
  prefix?: string;
  /** FLEET_DAILY_MAX_COST_USD / FLEET_DAILY_MAX_TOKENS, applied to every `day:` scope. */
  dailyCaps?: SpendCaps;
  /** TENANT_DAILY_MAX_COST_USD / TENANT_DAILY_MAX_TOKENS, applied to every `tenant-day:` scope. */
  tenantDailyCaps?: SpendCaps;
  reservationTtlMs?: number;
  dayScopeTtlMs?: number;
  batchScopeTtlMs?: number;
  /**
   * Clock for reservation expiries (ms since epoch); absent, the Redis server's clock. Every ledger over the same
   * keys must use the same clock.
   */
  now?: () => number;
}

export class SpendLedger {
  private readonly redis: RedisClient;
  private readonly prefix: string;
  private readonly dailyCapMicroUsd: number | undefined;
  private readonly dailyCapTokens: number | undefined;
  private readonly tenantCapMicroUsd: number | undefined;
  private readonly tenantCapTokens: number | undefined;
  private readonly reservationTtlMs: number;
  private readonly dayScopeTtlMs: number;
  private readonly batchScopeTtlMs: number;
  private readonly now: (() => number) | undefined;
  /** Bookings and settles of one turn go as one script. */
  private readonly batcher: LedgerBatcher;
  /** Tickets this ledger booked and has not settled, by id, with when (oldest first): the calls in flight. */
  private readonly open = new Map<string, number>();
  /** Tickets open when the connection closed: their booking may be gone with the server (connectionLost). */
  private readonly uncertain = new Set<string>();

  constructor(options: SpendLedgerOptions) {
    this.redis = options.redis;
    this.prefix = options.prefix ?? 'agentfleet';
    const daily = options.dailyCaps ?? {};
    this.dailyCapMicroUsd = daily.maxCostUsd === undefined ? undefined : microUsdDown(daily.maxCostUsd);
    this.dailyCapTokens = daily.maxTokens === undefined ? undefined : capTokens(daily.maxTokens);
    const tenant = options.tenantDailyCaps ?? {};
    this.tenantCapMicroUsd = tenant.maxCostUsd === undefined ? undefined : microUsdDown(tenant.maxCostUsd);
    this.tenantCapTokens = tenant.maxTokens === undefined ? undefined : capTokens(tenant.maxTokens);
    this.reservationTtlMs = positiveMs(options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS, 'reservation');
    this.dayScopeTtlMs = positiveMs(options.dayScopeTtlMs ?? DEFAULT_DAY_SCOPE_TTL_MS, 'day scope');
    this.batchScopeTtlMs = positiveMs(options.batchScopeTtlMs ?? DEFAULT_BATCH_SCOPE_TTL_MS, 'batch scope');
    this.now = options.now;
    this.batcher = new LedgerBatcher(this.redis);
  }

  /**
   * The connection to Redis closed. If it comes back on another server (a Sentinel failover), a booking the old
   * master took after its replica was promoted is gone, and a plain settle of it would find nothing to settle and
   * count nothing: a budget passed by that call. So every ticket open now is settled as `settleOrRecord` settles,
   * its actual counted once whether or not the server holds its booking (docs/operations.md).
   */
  connectionLost(): void {
    for (const id of this.open.keys()) this.uncertain.add(id);
  }

  /** Whether `day:` scopes have a cap in this process's configuration. */
  get hasDailyCaps(): boolean {
    return this.dailyCapMicroUsd !== undefined || this.dailyCapTokens !== undefined;
  }

  /** Stores the caps of a scope (a batch's budget), replacing earlier ones; an absent cap is unlimited. */
  async setCaps(scope: string, caps: SpendCaps): Promise<void> {
    assertScope(scope);
    const state = this.key('state', scope);
    const multi = this.redis.multi();
    if (caps.maxCostUsd === undefined) multi.hdel(state, 'cap_usd');
    else multi.hset(state, 'cap_usd', String(microUsdDown(caps.maxCostUsd)));
    if (caps.maxTokens === undefined) multi.hdel(state, 'cap_tok');
    else multi.hset(state, 'cap_tok', String(capTokens(caps.maxTokens)));
    multi.pexpire(state, this.scopeTtlMs(scope));
    const replies = await multi.exec();
    const failed = replies?.find(([error]) => error)?.[0];
    if (failed) throw failed;
    if (!replies) throw new Error('setCaps: transaction aborted');
  }

  /** Books the worst case in every scope, atomically, or refuses naming the scope and cap that bind. */
  async reserve(
    scopes: readonly string[],
    worstCase: CallCost,
    options: Pick<BookOptions, 'ttlMs' | 'id'> = {},
  ): Promise<ReserveResult> {
    const { reservation } = await this.book(scopes, worstCase, options);
    if (!reservation) throw new Error('spend ledger: a booking without a pause key came back paused');
    return reservation;
  }

  /**
   * `reserve`, with in the same script (one round trip) the settle of an earlier ticket over the same scopes and
   * the check of the fleet's pause, which comes after the settle and before any booking.
   */
  async book(scopes: readonly string[], worstCase: CallCost, options: BookOptions = {}): Promise<Booking> {
    return this.sendBooking(scopes, worstCase, options, false).booking;
  }

  /**
   * Books a call that is made without waiting for the answer: whatever the fleet's pause and the caps, the worst
   * case is booked (the call is going out), and the answer only says whether a cap or a pause applies, so the
   * caller waits for the next booking. For scopes known to have no cap, where a booking could only be refused by
   * a pause: see fleet-gate.ts.
   */
  bookInFlight(scopes: readonly string[], worstCase: CallCost, options: BookOptions = {}): InFlightBooking {
    return this.sendBooking(scopes, worstCase, options, true);
  }

  private sendBooking(
    scopes: readonly string[],
    worstCase: CallCost,
    options: BookOptions,
    inFlight: boolean,
  ): InFlightBooking {
    const unique = [...new Set(scopes)];
    if (unique.length === 0) throw new RangeError('reserve needs at least one scope');
    unique.forEach(assertScope);
    const usd = microUsdUp(worstCase.costUsd);
    const tokens = tokensUp(worstCase.tokens);
    const id = options.id ?? randomUUID();
    const ticket = encodeTicket({ id, scopes: unique });
    const ttl =
      options.ttlMs === undefined ? this.reservationTtlMs : positiveMs(options.ttlMs, 'reservation');
    const args: (string | number)[] = [this.clock(), id, String(usd), String(tokens), ttl];
    args.push(unique.length);
    for (const scope of unique) {
      const caps = this.configuredCaps(scope);
      args.push(this.scopeTtlMs(scope), caps.usd ?? '', caps.tokens ?? '');
    }
    const keys = this.scopeKeys(unique);
    const first = options.settleFirst && {
      ...options.settleFirst,
      ...decodeTicket(options.settleFirst.ticket),
    };
    if (first && !sameScopes(first.scopes, unique)) {
      throw new RangeError(
        `settleFirst: the ticket's scopes ${first.scopes.join(', ')} are not ${unique.join(', ')}`,
      );
    }
    // A ticket whose booking may be lost is settled on its own, counted whatever the server holds: asked first,
    // it goes first in the same script.
    const settledApart =
      first && this.uncertain.has(first.id) ? this.settleTicket(first.ticket, first.actual, true) : null;
    if (first && !settledApart) {
      this.open.delete(first.id);
      args.push(first.id, String(microUsdUp(first.actual.costUsd)), String(tokensUp(first.actual.tokens)));
    } else {
      args.push('', '0', '0');
    }
    args.push(options.pauseKey === undefined ? '0' : '1', inFlight ? '1' : '0');
    if (options.pauseKey !== undefined) keys.push(options.pauseKey);

    this.trackOpen(id);
    const booked = this.batcher.run('reserve', keys, args).then((reply): Booking => {
      if (!Array.isArray(reply)) throw new Error(`spend ledger: unexpected reply ${JSON.stringify(reply)}`);
      const statuses = reply[0] === 0 ? reply[6] : reply[2];
      const settled =
        first && !settledApart
          ? Object.fromEntries(unique.map((scope, i) => [scope, (statuses as SettleStatus[])[i] ?? 'none']))
          : null;
      // Refused or paused, nothing was booked; a call that went out without waiting is booked whatever the answer.
      if (reply[0] !== 1 && !inFlight) this.forgetOpen(id);
      if (reply[0] === 2) return { reservation: null, pausedMs: Number(reply[1]), settled, capped: null };
      if (reply[0] === 1) {
        const reservation = { ok: true as const, ticket, expiresAt: Number(reply[1]) };
        return { reservation, pausedMs: Number(reply[4]), settled, capped: reply[3] === 1 };
      }
      const [, reason, index, used, reserved, cap] = reply as [
        0,
        BudgetStopReason,
        number,
        string,
        string,
        string,
      ];
      const scope = unique[index - 1] ?? '?';
      const needed = reason === 'cost_budget' ? usd : tokens;
      const detail = refusalDetail(reason, Number(used), Number(reserved), needed, Number(cap));
      const message = refusalMessage(scope, reason, detail);
      return {
        reservation: { ok: false, reason, scope, message, detail },
        pausedMs: 0,
        settled,
        capped: true,
      };
    });
    const booking = settledApart
      ? Promise.all([settledApart, booked]).then(([settled, b]) => ({ ...b, settled }))
      : booked;
    return { ticket, booking };
  }

  private trackOpen(id: string): void {
    const now = Date.now();
    this.open.delete(id);
    this.open.set(id, now);
    // A ticket never settled (its caller gone) is let go once its reservation would have expired as spent.
    for (const [openId, at] of this.open) {
      if (now - at <= this.reservationTtlMs) break;
      this.forgetOpen(openId);
    }
  }

  private forgetOpen(id: string): void {
    this.open.delete(id);
    this.uncertain.delete(id);
  }

  /**
   * Settles a reservation with what the call cost (0 for a request that was never answered): the reservation
   * leaves every scope of the ticket and the actual is added to what they used. Settling again changes nothing.
   */
  async settle(ticket: string, actual: CallCost): Promise<Record<string, SettleStatus>> {
    return this.settleTicket(ticket, actual, false);
  }

  /**
   * `settle` for a call made without waiting for its booking when the booking failed (it may not have run): a
   * ticket the ledger does not hold has its actual added all the same. Once per ticket: sent again, it answers as
   * the first time and adds nothing.
   */
  async settleOrRecord(ticket: string, actual: CallCost): Promise<Record<string, SettleStatus>> {
    return this.settleTicket(ticket, actual, true);
  }

  private async settleTicket(
    ticket: string,
    actual: CallCost,
    record: boolean,
  ): Promise<Record<string, SettleStatus>> {
    const { id, scopes } = decodeTicket(ticket);
    const recordUnheld = record || this.uncertain.has(id);
    this.forgetOpen(id);
    const usd = microUsdUp(actual.costUsd);
    const tokens = tokensUp(actual.tokens);
    const args: (string | number)[] = [id, String(usd), String(tokens), scopes.length];
    for (const scope of scopes) args.push(this.scopeTtlMs(scope));
    args.push(recordUnheld ? '1' : '0');
    const reply = await this.batcher.run('settle', this.scopeKeys(scopes), args);
    if (!Array.isArray(reply) || reply.length !== scopes.length) {
      throw new Error(`spend ledger: unexpected reply ${JSON.stringify(reply)}`);
    }
    return Object.fromEntries(scopes.map((scope, i) => [scope, reply[i] as SettleStatus]));
  }

  /** What a scope used and has reserved (expired reservations counted as used), and its caps. */
  async getSpend(scope: string): Promise<ScopeSpend> {
    assertScope(scope);
    const reply = await READ.run(this.redis, this.scopeKeys([scope]), [this.clock(), this.scopeTtlMs(scope)]);
    if (!Array.isArray(reply) || reply.length !== 7) {
      throw new Error(`spend ledger: unexpected reply ${JSON.stringify(reply)}`);
    }
    const [usedUsd, usedTok, resUsd, resTok, storedUsd, storedTok, live] = reply as string[];
    const configured = this.configuredCaps(scope);
    const capMicroUsd = tighter(storedUsd, configured.usd);
    const capTokens = tighter(storedTok, configured.tokens);
    return {
      usedUsd: Number(usedUsd) / MICRO_USD_PER_USD,
      usedTokens: Number(usedTok),
      reservedUsd: Number(resUsd) / MICRO_USD_PER_USD,
      reservedTokens: Number(resTok),
      capUsd: capMicroUsd === null ? null : capMicroUsd / MICRO_USD_PER_USD,
      capTokens,
      usedMicroUsd: Number(usedUsd),
      reservedMicroUsd: Number(resUsd),
      capMicroUsd,
      liveReservations: Number(live),
    };
  }

  /** The Redis keys of a scope (for operators and tests). */
  keysOf(scope: string): string[] {
    assertScope(scope);
    return this.scopeKeys([scope]);
  }

  private scopeKeys(scopes: readonly string[]): string[] {
    return scopes.flatMap((scope) =>
      (['state', 'res', 'amt', 'exp'] as const).map((k) => this.key(k, scope)),
    );
  }

  private key(kind: 'state' | 'res' | 'amt' | 'exp', scope: string): string {
    return `${this.prefix}:{fleet-ledger}:${kind}:${scope}`;
  }

  private clock(): string {
    return this.now ? String(Math.floor(this.now())) : '';
  }

  private scopeTtlMs(scope: string): number {
    // A hold lives as long as a batch may: a child can wait days for a person's decision.
    return scope.startsWith('batch:') || scope.startsWith('hold:')
      ? this.batchScopeTtlMs
      : this.dayScopeTtlMs;
  }

  private configuredCaps(scope: string): { usd?: number; tokens?: number } {
    if (scope.startsWith('day:')) return { usd: this.dailyCapMicroUsd, tokens: this.dailyCapTokens };
    if (scope.startsWith('tenant-day:')) return { usd: this.tenantCapMicroUsd, tokens: this.tenantCapTokens };
    return {};
  }
}

function positiveMs(ms: number, what: string): number {
  if (!Number.isInteger(ms) || ms <= 0) throw new RangeError(`${what} TTL must be a positive integer of ms`);
  return ms;
}

function tighter(stored: string | undefined, configured: number | undefined): number | null {
  const values = [stored ? Number(stored) : undefined, configured].filter(
    (v): v is number => v !== undefined,
  );
  return values.length === 0 ? null : Math.min(...values);
}
