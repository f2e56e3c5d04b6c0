// The fleet's spend ledger in Redis: budgets per UTC day, batch and tenant day, shared by every worker. A call's
// worst case is reserved in all its scopes in one Lua script, in integer micro-dollars, and settled after; a
// crashed worker's reservation expires as spent. Why each choice: docs/limits.md (the spend ledger).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { BudgetStopReason } from '../kernel/budget.js';
import type { CallCost } from '../kernel/call-gate.js';
import { TENANT_NAME } from '../queue/tenant-name.js';
import { LuaScript } from './lua-script.js';

export const MICRO_USD_PER_USD = 1_000_000;
export const DEFAULT_RESERVATION_TTL_MS = 10 * 60_000;
export const DEFAULT_DAY_SCOPE_TTL_MS = 3 * 86_400_000;
export const DEFAULT_BATCH_SCOPE_TTL_MS = 30 * 86_400_000;

/**
 * Largest amount (micro-dollars or tokens) one call may book. Lua prints numbers with 14 significant digits,
 * so every figure a script handles stays below 10^14; this bound ($10M, 10^13 tokens) is far above any call.
 */
const MAX_AMOUNT = 1e13;

export interface SpendCaps {
  maxCostUsd?: number;
  maxTokens?: number;
}

/** Why a scope refused a call, in the unit of the cap that binds (micro-dollars or tokens). */
export interface RefusalDetail {
  unit: 'micro_usd' | 'tokens';
  cap: number;
  spent: number;
  /** Held by the live reservations of other calls in flight (other jobs, other workers). */
  reservedByOthers: number;
  /** What the cap has left for this call: cap − spent − reserved by others (never below 0). */
  left: number;
  /** This call's worst case. */
  needed: number;
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
  redis: Redis;
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

/** Rounds a dollar amount up to whole micro-dollars (worst cases, actuals). */
export function microUsdUp(usd: number): number {
  return checkedAmount(toMicroUsd(finiteNonNegative(usd, 'amount in USD'), 'up'), 'amount in USD');
}

/** Rounds a dollar cap down to whole micro-dollars. */
export function microUsdDown(usd: number): number {
  return Math.min(toMicroUsd(finiteNonNegative(usd, 'cap in USD'), 'down'), Number.MAX_SAFE_INTEGER);
}

/**
 * Whole micro-dollars of an amount, computed exactly from its shortest decimal form (the digits JavaScript prints
 * for it): 0.57 is 570000, not the 569999.9999999999 that `0.57 * 1e6` gives; 0.0000029 is 2.9, so 3 rounded up
 * and 2 rounded down.
 */
function toMicroUsd(usd: number, direction: 'up' | 'down'): number {
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(usd.toString());
  if (!match) throw new RangeError(`not an amount in USD: ${usd}`);
  const integer = match[1] ?? '';
  const digits = integer + (match[2] ?? '');
  // How many of the digits come before the micro-dollar point.
  const point = integer.length + Number(match[3] ?? 0) + 6;
  const whole = point <= 0 ? 0 : Number(digits.slice(0, point).padEnd(point, '0'));
  const fraction = point <= 0 ? digits : digits.slice(point);
  return direction === 'up' && /[1-9]/.test(fraction) ? whole + 1 : whole;
}

/** The scope of a UTC day: `day:YYYY-MM-DD`. */
export function dayScope(at: number | Date): string {
  return `day:${new Date(at).toISOString().slice(0, 10)}`;
}

/** The scope of a batch: `batch:<id>` (1 to 256 characters, no control characters). */
export function batchScope(batchId: string): string {
  const scope = `batch:${batchId}`;
  assertScope(scope);
  return scope;
}

/** The scope of one tenant's UTC day: `tenant-day:YYYY-MM-DD:<tenant>`. */
export function tenantDayScope(tenant: string, at: number | Date): string {
  if (!TENANT_NAME.test(tenant)) throw new RangeError(`bad tenant ${JSON.stringify(tenant)}`);
  return `tenant-day:${new Date(at).toISOString().slice(0, 10)}:${tenant}`;
}

const SCOPE =
  /^(day:\d{4}-\d{2}-\d{2}|batch:[^\p{Cc}]{1,256}|tenant-day:\d{4}-\d{2}-\d{2}:[A-Za-z0-9_.@-]{1,64})$/u;

export function assertScope(scope: string): void {
  if (!SCOPE.test(scope)) throw new RangeError(`bad spend scope ${JSON.stringify(scope)}`);
}

function finiteNonNegative(value: number, what: string): number {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${what} must be a finite number >= 0: ${value}`);
  return value;
}

function checkedAmount(value: number, what: string): number {
  if (value > MAX_AMOUNT) throw new RangeError(`${what} is too large for the spend ledger: ${value}`);
  return value;
}

const tokensUp = (tokens: number) =>
  checkedAmount(Math.ceil(finiteNonNegative(tokens, 'token count')), 'token count');

// --- Lua -------------------------------------------------------------------------------------------------
// Per scope, four keys: state (hash: used_usd, used_tok, res_usd, res_tok, cap_usd, cap_tok), res (sorted set:
// ticket -> expiry ms), amt (hash: ticket -> "<micro-usd>:<tokens>" reserved), exp (hash: expired tickets ->
// their amounts, until a late settle corrects them). Figures are passed to Redis as the strings they came in,
// never as Lua numbers, so no formatting can round them.

const LUA_COMMON = `
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function add(key, field, amount, negate)
  if amount == '0' then return end
  if negate then amount = '-' .. amount end
  redis.call('HINCRBY', key, field, amount)
end

local function split(amounts)
  return string.match(amounts, '^(%d+):(%d+)$')
end

-- Expired reservations are counted as spent at their worst case, and remembered for a late settle.
local function sweep(st, rs, am, ex, now)
  local expired = redis.call('ZRANGEBYSCORE', rs, '-inf', now)
  if #expired == 0 then return 0 end
  for _, t in ipairs(expired) do
    local a = redis.call('HGET', am, t)
    if a then
      local u, k = split(a)
      add(st, 'used_usd', u)
      add(st, 'used_tok', k)
      add(st, 'res_usd', u, true)
      add(st, 'res_tok', k, true)
      redis.call('HSET', ex, t, a)
      redis.call('HDEL', am, t)
    end
  end
  redis.call('ZREMRANGEBYSCORE', rs, '-inf', now)
  return #expired
end

local function touch(base, ttl)
  for j = 1, 4 do redis.call('PEXPIRE', KEYS[base + j], ttl) end
end

-- Takes a ticket's worst case ("<usd>:<tok>") out of the fields that hold it and adds its actual to used.
local function replace_worst(st, usd_field, tok_field, worst, usd, tok)
  local u, k = split(worst)
  add(st, usd_field, u, true)
  add(st, tok_field, k, true)
  add(st, 'used_usd', usd)
  add(st, 'used_tok', tok)
end

-- Settles a ticket in the i-th scope of KEYS: 'settled', 'late' (its reservation had expired) or 'none'.
local function settle_in(i, ticket, usd, tok)
  local st, rs, am, ex = KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4]
  local a = redis.call('HGET', am, ticket)
  local e = redis.call('HGET', ex, ticket)
  if a then
    replace_worst(st, 'res_usd', 'res_tok', a, usd, tok)
    redis.call('HDEL', am, ticket)
    redis.call('ZREM', rs, ticket)
    return 'settled'
  elseif e then
    -- An expired reservation was counted as used at its worst case.
    replace_worst(st, 'used_usd', 'used_tok', e, usd, tok)
    redis.call('HDEL', ex, ticket)
    return 'late'
  end
  return 'none'
end
`;

// The tighter of the stored cap and the configured one; '' for none.
const RESERVE = new LuaScript(`${LUA_COMMON}
local function cap_of(stored, configured)
  if stored and configured ~= '' then
    if tonumber(configured) < tonumber(stored) then return configured end
    return stored
  end
  if stored then return stored end
  return configured
end

local now = now_ms(ARGV[1])
local ticket, usd, tok = ARGV[2], ARGV[3], ARGV[4]
local ttl, n = tonumber(ARGV[5]), tonumber(ARGV[6])
-- After the scopes' triplets: a ticket of the same scopes to settle first ('' for none) with its actuals,
-- '1' when KEYS[4n + 1] is the fleet's pause key: while it lives, nothing is booked, and '1' for a call already
-- made: it is booked whatever the pause and the caps, which are only reported.
local extra = 7 + 3 * n
local in_flight = ARGV[extra + 4] == '1'
local settled = {}
if ARGV[extra] ~= '' then
  for i = 0, n - 1 do settled[i + 1] = settle_in(i, ARGV[extra], ARGV[extra + 1], ARGV[extra + 2]) end
end
local paused_ms = 0
if ARGV[extra + 3] == '1' then
  local paused = redis.call('PTTL', KEYS[4 * n + 1])
  if paused > 0 then
    if not in_flight then
      for j = 0, n - 1 do touch(4 * j, ARGV[7 + 3 * j]) end
      return {2, paused, settled}
    end
    paused_ms = paused
  end
end
for i = 0, n - 1 do
  sweep(KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4], now)
end
local capped = 0
for i = 0, n - 1 do
  local f = redis.call('HMGET', KEYS[4 * i + 1], 'used_usd', 'used_tok', 'res_usd', 'res_tok', 'cap_usd', 'cap_tok')
  local cap_usd = cap_of(f[5], ARGV[8 + 3 * i])
  local cap_tok = cap_of(f[6], ARGV[9 + 3 * i])
  if cap_usd ~= '' or cap_tok ~= '' then capped = 1 end
  local used_usd, used_tok, res_usd, res_tok = f[1] or '0', f[2] or '0', f[3] or '0', f[4] or '0'
  local refusal
  if cap_usd ~= '' and tonumber(used_usd) + tonumber(res_usd) + tonumber(usd) > tonumber(cap_usd) then
    refusal = {0, 'cost_budget', i + 1, used_usd, res_usd, cap_usd}
  elseif cap_tok ~= '' and tonumber(used_tok) + tonumber(res_tok) + tonumber(tok) > tonumber(cap_tok) then
    refusal = {0, 'token_budget', i + 1, used_tok, res_tok, cap_tok}
  end
  if refusal and not in_flight then
    for j = 0, n - 1 do touch(4 * j, ARGV[7 + 3 * j]) end
    refusal[7] = settled
    return refusal
  end
end
for i = 0, n - 1 do
  if redis.call('HEXISTS', KEYS[4 * i + 3], ticket) == 1 then return redis.error_reply('ERR duplicate spend ticket') end
end
local expires = now + ttl
for i = 0, n - 1 do
  local st, rs, am = KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3]
  add(st, 'res_usd', usd)
  add(st, 'res_tok', tok)
  redis.call('ZADD', rs, expires, ticket)
  redis.call('HSET', am, ticket, usd .. ':' .. tok)
  touch(4 * i, ARGV[7 + 3 * i])
end
return {1, expires, settled, capped, paused_ms}
`);

// After the scopes' TTLs, '1' when a ticket the ledger does not hold is recorded as spent all the same (a call
// made while its booking failed: see settleOrRecord).
const SETTLE = new LuaScript(`${LUA_COMMON}
local ticket, usd, tok, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local record = ARGV[5 + n] == '1'
local out = {}
for i = 0, n - 1 do
  out[i + 1] = settle_in(i, ticket, usd, tok)
  if out[i + 1] == 'none' and record then
    add(KEYS[4 * i + 1], 'used_usd', usd)
    add(KEYS[4 * i + 1], 'used_tok', tok)
    out[i + 1] = 'recorded'
  end
  touch(4 * i, ARGV[5 + i])
end
return out
`);

const READ = new LuaScript(`${LUA_COMMON}
if sweep(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now_ms(ARGV[1])) > 0 then touch(0, ARGV[2]) end
local f = redis.call('HMGET', KEYS[1], 'used_usd', 'used_tok', 'res_usd', 'res_tok', 'cap_usd', 'cap_tok')
return {f[1] or '0', f[2] or '0', f[3] or '0', f[4] or '0', f[5] or '', f[6] or '', redis.call('ZCARD', KEYS[2])}
`);

// --- tickets --------------------------------------------------------------------------------------------
// A ticket names its reservation (a random id, unique across processes) and the scopes it was booked in, so
// any process can settle it without another lookup.

interface DecodedTicket {
  id: string;
  scopes: string[];
}

function encodeTicket(ticket: DecodedTicket): string {
  return `v1.${ticket.id}.${Buffer.from(JSON.stringify(ticket.scopes)).toString('base64url')}`;
}

export function decodeTicket(ticket: string): DecodedTicket {
  const match = /^v1\.([0-9a-f-]{36})\.([A-Za-z0-9_-]+)$/.exec(ticket);
  let scopes: unknown;
  try {
    scopes = match ? JSON.parse(Buffer.from(match[2] ?? '', 'base64url').toString('utf8')) : undefined;
  } catch {
    scopes = undefined;
  }
  if (
    !match ||
    !Array.isArray(scopes) ||
    scopes.length === 0 ||
    !scopes.every((s): s is string => typeof s === 'string' && SCOPE.test(s))
  ) {
    throw new RangeError(`not a spend ticket: ${JSON.stringify(ticket)}`);
  }
  return { id: match[1] ?? '', scopes };
}

// --- the ledger ---------------------------------------------------------------------------------------------

export class SpendLedger {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly dailyCapMicroUsd: number | undefined;
  private readonly dailyCapTokens: number | undefined;
  private readonly tenantCapMicroUsd: number | undefined;
  private readonly tenantCapTokens: number | undefined;
  private readonly reservationTtlMs: number;
  private readonly dayScopeTtlMs: number;
  private readonly batchScopeTtlMs: number;
  private readonly now: (() => number) | undefined;

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
  async reserve(scopes: readonly string[], worstCase: CallCost): Promise<ReserveResult> {
    const { reservation } = await this.book(scopes, worstCase);
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
    const id = randomUUID();
    const ticket = encodeTicket({ id, scopes: unique });
    const args: (string | number)[] = [this.clock(), id, String(usd), String(tokens), this.reservationTtlMs];
    args.push(unique.length);
    for (const scope of unique) {
      const caps = this.configuredCaps(scope);
      args.push(this.scopeTtlMs(scope), caps.usd ?? '', caps.tokens ?? '');
    }
    const keys = this.scopeKeys(unique);
    const first = options.settleFirst;
    if (first) {
      const settling = decodeTicket(first.ticket);
      if (!sameScopes(settling.scopes, unique)) {
        throw new RangeError(
          `settleFirst: the ticket's scopes ${settling.scopes.join(', ')} are not ${unique.join(', ')}`,
        );
      }
      args.push(settling.id, String(microUsdUp(first.actual.costUsd)), String(tokensUp(first.actual.tokens)));
    } else {
      args.push('', '0', '0');
    }
    args.push(options.pauseKey === undefined ? '0' : '1', inFlight ? '1' : '0');
    if (options.pauseKey !== undefined) keys.push(options.pauseKey);

    const booking = RESERVE.run(this.redis, keys, args).then((reply): Booking => {
      if (!Array.isArray(reply)) throw new Error(`spend ledger: unexpected reply ${JSON.stringify(reply)}`);
      const statuses = reply[0] === 0 ? reply[6] : reply[2];
      const settled = first
        ? Object.fromEntries(unique.map((scope, i) => [scope, (statuses as SettleStatus[])[i] ?? 'none']))
        : null;
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
    return { ticket, booking };
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
   * ticket the ledger does not hold has its actual added all the same. Not idempotent: send it once.
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
    const usd = microUsdUp(actual.costUsd);
    const tokens = tokensUp(actual.tokens);
    const args: (string | number)[] = [id, String(usd), String(tokens), scopes.length];
    for (const scope of scopes) args.push(this.scopeTtlMs(scope));
    args.push(record ? '1' : '0');
    const reply = await SETTLE.run(this.redis, this.scopeKeys(scopes), args);
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
    return scope.startsWith('batch:') ? this.batchScopeTtlMs : this.dayScopeTtlMs;
  }

  private configuredCaps(scope: string): { usd?: number; tokens?: number } {
    if (scope.startsWith('day:')) return { usd: this.dailyCapMicroUsd, tokens: this.dailyCapTokens };
    if (scope.startsWith('tenant-day:')) return { usd: this.tenantCapMicroUsd, tokens: this.tenantCapTokens };
    return {};
  }
}

const sameScopes = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((scope, i) => scope === b[i]);

function capTokens(tokens: number): number {
  return Math.min(Math.floor(finiteNonNegative(tokens, 'token cap')), Number.MAX_SAFE_INTEGER);
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

const formatUsd = (micro: number) => `$${(micro / MICRO_USD_PER_USD).toFixed(6).replace(/0{1,4}$/, '')}`;
const formatTokens = (tokens: number) => `${tokens.toLocaleString('en-US')} tokens`;

/** Whose cap a scope is, for people: "the fleet's daily cost cap for 2026-12-01". */
function ownerOf(scope: string, reason: BudgetStopReason): string {
  const what = reason === 'cost_budget' ? 'cost' : 'token';
  if (scope.startsWith('day:')) return `the fleet's daily ${what} cap for ${scope.slice(4)}`;
  if (scope.startsWith('tenant-day:')) {
    const [date, ...tenant] = scope.slice('tenant-day:'.length).split(':');
    return `the daily ${what} cap of tenant ${tenant.join(':')} for ${date}`;
  }
  return `the ${what} budget of batch ${scope.slice(6)}`;
}

/**
 * What a refusal says (why a run stopped before calling the model): what the cap had left, what the call
 * needed, and how much of the cap other calls in flight held reserved at that moment, which is why a batch
 * whose report shows 37% spent can still refuse a call.
 */
export function refusalDetail(
  reason: BudgetStopReason,
  spent: number,
  reservedByOthers: number,
  needed: number,
  cap: number,
): RefusalDetail {
  return {
    unit: reason === 'cost_budget' ? 'micro_usd' : 'tokens',
    cap,
    spent,
    reservedByOthers,
    left: Math.max(0, cap - spent - reservedByOthers),
    needed,
  };
}

function refusalMessage(scope: string, reason: BudgetStopReason, d: RefusalDetail): string {
  const owner = ownerOf(scope, reason);
  const f = reason === 'cost_budget' ? formatUsd : formatTokens;
  return (
    `${owner[0]?.toUpperCase()}${owner.slice(1)} cannot cover this call: ${f(d.left)} of ${f(d.cap)} left, ` +
    `the call needs up to ${f(d.needed)} (${f(d.spent)} spent, ${f(d.reservedByOthers)} reserved by other ` +
    `calls in flight at that moment)`
  );
}
