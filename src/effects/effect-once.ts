// The one implementation of at-most-once effects on the effect ledger (the state machine: docs/side-effects.md,
// "One state machine"). `settleOnce` claims the call's row, makes the effect on a `new` claim, and otherwise
// settles the row it found: done gives its value back; pending is waited on while young (its attempt may be
// alive), then taken over when never started, asked of the lookup when started, reported uncertain when
// nothing can tell. `runOnce` is ToolContext.once on it; send_email runs on `settleOnce` with its own rules
// (send-email-once.ts), so both keep one property with one piece of code.
import { ToolError } from '../kernel/errors.js';
import { sleep } from '../kernel/sleep.js';
import {
  effectKeyOf,
  NOT_DONE,
  type EffectClaimResult,
  type EffectLedger,
  type EffectRow,
} from './effect-ledger.js';
import type {
  EffectHooks,
  EffectLookupAnswer,
  OnceAttempt,
  OnceLease,
  OnceOptions,
  PendingEffect,
} from '../kernel/tool.js';

export const DEFAULT_PENDING_GRACE_MS = 120_000;
const DEFAULT_POLL_MS = 1_000;
/** Rounds of settle-and-claim-again before a call stops: each round is a takeover by this call. */
const MAX_ROUNDS = 3;

/** What `runOnce` throws when the effect may have happened and nothing could tell: it is not run again. */
export class EffectUncertainError extends Error {
  constructor(
    readonly effectKey: string,
    readonly why = 'an earlier attempt stopped between the effect and its record',
  ) {
    super(
      `an earlier attempt started this effect (${effectKey}) and stopped before recording its outcome: it is not run again`,
    );
  }
}

/** The per-job cap refused the claim; nothing was done. */
export class EffectCapError extends ToolError {
  constructor(
    readonly count: number,
    tool: string,
    maxPerJob: number | undefined,
  ) {
    super(
      'effect_cap_reached',
      `this run already has ${count} effects of ${tool}, the most one run may have ` +
        `(maxPerJob ${maxPerJob}); nothing was done`,
    );
  }
}

/** The ledger could not be read or written; `cause` is the store's error. */
export class EffectLedgerUnavailable extends ToolError {
  constructor(cause: unknown) {
    super('effect_ledger_unavailable', 'the effect ledger could not be read or written', {
      transient: true,
      cause,
    });
  }
}

export interface OnceCall {
  callKey: string;
  jobId: string;
  tool: string;
  signal: AbortSignal;
}

/** What of the ledger the state machine uses (EffectLedger; a test may wrap one). */
export type OnceLedger = Pick<
  EffectLedger,
  'claim' | 'get' | 'markStarted' | 'markDone' | 'recordDone' | 'release' | 'markUncertain' | 'noteError'
> & { readonly defersDone?: boolean };

/**
 * How a tool's calls settle rows they find, where send_email differs from ctx.once's defaults: the words of
 * its notes (which its users read in results and reports), waiting out the grace even without a lookup, and a
 * done record that never fails the call (the effect happened; a missing record is settled by lookup later).
 */
export interface OnceRules {
  pollMs?: number;
  /** Without a lookup, wait while a pending row is young, then mark it uncertain (default: report it at once). */
  waitWithoutLookup?: boolean;
  /** Why a started row nothing can settle is uncertain. */
  noLookupWhy?: string;
  lookupFailedWhy?: (message: string) => string;
  /** The note on a row taken over because its attempt never started it. */
  unstartedNote?: string;
  /** The note on a row the lookup found not done, released for this call to make. */
  lookupNotDoneNote?: string;
  /** The lookup a call asks (default the hooks'): send_email records its own words with what it found. */
  lookup?: (effect: PendingEffect, signal: AbortSignal) => Promise<EffectLookupAnswer>;
  /** Done records never fail the call: logged here, the row left pending and started for the lookup. */
  onNotRecorded?: (error: unknown) => void;
}

export type OnceOutcome<T> =
  /** This attempt made it (`recorded` false: it left the row pending, or was taken over before starting). */
  | { kind: 'made'; value: T; recorded: boolean }
  /** An earlier attempt did (or the lookup found it did): its recorded value, and the row. */
  | { kind: 'found'; value: unknown; row: EffectRow }
  /** It may have happened and nothing could tell: not made again. `row`: the last one seen. */
  | { kind: 'uncertain'; why: string; row: EffectRow | null };

/** The options `ctx.once` takes: a key (the old form) or the options. */
export function onceOptionsOf<L extends OnceLease>(
  option: string | OnceOptions<L> | undefined,
): OnceOptions<L> {
  return typeof option === 'string' ? { key: option } : (option ?? {});
}

export function pendingEffectOf(row: EffectRow): PendingEffect {
  return { effectKey: row.effectKey, jobId: row.jobId, tool: row.tool, ref: row.ref };
}

/** ToolContext.once: the value, or EffectUncertainError when nothing could tell whether it happened. */
export async function runOnce<T, L extends OnceLease = OnceLease>(
  ledger: OnceLedger,
  call: OnceCall,
  effect: (attempt: OnceAttempt<L>) => Promise<T>,
  options: OnceOptions<L> = {},
  hooks: EffectHooks = {},
): Promise<T> {
  const outcome = await settleOnce(ledger, call, effect, options, hooks);
  if (outcome.kind === 'uncertain') {
    throw new EffectUncertainError(effectKeyOf(call.callKey, options.key), outcome.why);
  }
  return outcome.value as T;
}

/** A thrown error that frees the row with this note instead of the default "the effect threw". */
const notDoneNotes = new WeakMap<object, string>();

/** Marks an error the effect throws with the note its row is released with (it certainly did not happen). */
export function notDone<E extends Error>(error: E, note: string): E {
  notDoneNotes.set(error, note);
  return error;
}

export async function settleOnce<T, L extends OnceLease = OnceLease>(
  ledger: OnceLedger,
  call: OnceCall,
  effect: (attempt: OnceAttempt<L>) => Promise<T>,
  options: OnceOptions<L> = {},
  hooks: EffectHooks = {},
  rules: OnceRules = {},
): Promise<OnceOutcome<T>> {
  const effectKey = effectKeyOf(call.callKey, options.key);
  const graceMs = hooks.pendingGraceMs ?? DEFAULT_PENDING_GRACE_MS;
  const lookup = rules.lookup ?? hooks.lookup?.bind(hooks);
  let last: EffectRow | null = null;

  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const { claim, lease } = await claimWithLease();
    switch (claim.kind) {
      case 'cap_reached':
        throw new EffectCapError(claim.count, call.tool, hooks.maxPerJob);
      case 'done':
        return { kind: 'found', value: claim.row.result, row: claim.row };
      case 'new':
        try {
          return await make(claim.attempt, lease);
        } finally {
          lease?.release();
        }
      case 'pending': {
        last = claim.row;
        const settled = await settle(claim.row);
        if (settled !== 'claim_again') return settled;
      }
    }
  }
  return { kind: 'uncertain', why: 'other attempts of this call kept taking it over', row: last };

  /** The lease first, with nothing recorded; the claim started with it in one write. */
  async function claimWithLease(): Promise<{ claim: EffectClaimResult; lease: L | undefined }> {
    const lease = options.acquire ? await options.acquire(call.signal) : undefined;
    let claim: EffectClaimResult;
    try {
      claim = await store(() =>
        ledger.claim({
          effectKey,
          jobId: call.jobId,
          tool: call.tool,
          started: lease !== undefined || (options.startWithClaim ?? true),
          ...(options.ref !== undefined ? { ref: options.ref } : {}),
          ...(options.detail !== undefined ? { detail: options.detail } : {}),
          ...(hooks.maxPerJob !== undefined ? { maxPerJob: hooks.maxPerJob } : {}),
        }),
      );
    } catch (error) {
      lease?.release();
      throw error;
    }
    if (claim.kind !== 'new') lease?.release();
    return { claim, lease };
  }

  async function make(attempt: number, lease: L | undefined): Promise<OnceOutcome<T>> {
    let started = lease !== undefined || (options.startWithClaim ?? true);
    // Set when the row is not this attempt's to record: left pending, taken over, or the ledger failed at start.
    let unrecorded = false;
    const handle: OnceAttempt<L> = {
      attempt,
      lease,
      async start() {
        if (started) return true;
        let marked: boolean;
        try {
          marked = await ledger.markStarted(effectKey, attempt);
        } catch (error) {
          // The row stays claimed and never started: whoever meets it knows nothing happened.
          unrecorded = true;
          throw new EffectLedgerUnavailable(error);
        }
        started = marked;
        if (!marked) unrecorded = true;
        return marked;
      },
      async leavePending(why) {
        unrecorded = true;
        await ledger.noteError(effectKey, why, attempt).catch(rules.onNotRecorded ?? ignore);
      },
    };
    let value: T;
    try {
      value = await effect(handle);
    } catch (error) {
      if (!unrecorded) {
        const why =
          notDoneNotes.get(error as object) ?? `${NOT_DONE}: the effect threw (${messageOf(error)})`;
        await ledger.release(effectKey, attempt, why).catch(rules.onNotRecorded ?? ignore);
      }
      throw error;
    }
    if (unrecorded) return { kind: 'made', value, recorded: false };
    if (rules.onNotRecorded) {
      // It happened: a record that fails leaves the row pending and started, settled by the lookup later. Only
      // the record of an effect that started may leave with those claimed with it (effect-done-records.ts).
      if (ledger.defersDone && started) void ledger.recordDone(effectKey, value).catch(rules.onNotRecorded);
      else await ledger.markDone(effectKey, value).catch(rules.onNotRecorded);
    } else {
      // If this write fails the row stays pending and started: settled by the lookup or reported uncertain.
      await store(() => ledger.markDone(effectKey, value));
    }
    return { kind: 'made', value, recorded: true };
  }

  /** A row another attempt holds or left: an outcome, or 'claim_again' once the row is free to claim. */
  async function settle(found: EffectRow): Promise<OnceOutcome<T> | 'claim_again'> {
    let row = found;
    if (!lookup && !rules.waitWithoutLookup) {
      // Nothing to ask, so nothing to wait for: only a row proven never started, and old enough that its
      // attempt is gone, is taken over; any other is reported now.
      if (row.status === 'pending' && row.startedAt === null && row.ageMs >= graceMs) {
        return takeOverUnstarted(row);
      }
      return { kind: 'uncertain', why: new EffectUncertainError(effectKey).why, row };
    }
    while (row.status === 'pending' && row.ageMs < graceMs) {
      const wait = Math.min(rules.pollMs ?? DEFAULT_POLL_MS, graceMs - row.ageMs);
      try {
        await sleep(wait, call.signal);
      } catch {
        return { kind: 'uncertain', why: 'the call was stopped while an earlier attempt still held it', row };
      }
      // A ledger that does not answer ages the row by the wait, so the wait still ends.
      const waited = row;
      const now = await ledger.get(effectKey).catch(() => ({ ...waited, ageMs: waited.ageMs + wait }));
      if (now === null || now.status === 'failed') return 'claim_again';
      if (now.status === 'done') return { kind: 'found', value: now.result, row: now };
      row = now;
      last = now;
    }
    if (row.status === 'pending' && row.startedAt === null) return takeOverUnstarted(row);
    if (!lookup) {
      const why = rules.noLookupWhy ?? new EffectUncertainError(effectKey).why;
      // Only the attempt judged: one that took the row over meanwhile is making it, and stays pending.
      await ledger.markUncertain(effectKey, why, row.attempt).catch(rules.onNotRecorded ?? ignore);
      return { kind: 'uncertain', why, row };
    }
    let answer: EffectLookupAnswer;
    try {
      answer = await lookup(pendingEffectOf(row), call.signal);
    } catch (error) {
      const why = (rules.lookupFailedWhy ?? ((m) => `the lookup failed (${m})`))(messageOf(error));
      await ledger.markUncertain(effectKey, why, row.attempt).catch(rules.onNotRecorded ?? ignore);
      return { kind: 'uncertain', why, row };
    }
    if (answer.happened) {
      const value = answer.value ?? null;
      if (rules.onNotRecorded) await ledger.markDone(effectKey, value).catch(rules.onNotRecorded);
      else await store(() => ledger.markDone(effectKey, value));
      return { kind: 'found', value, row };
    }
    const why = rules.lookupNotDoneNote ?? `${NOT_DONE} (lookup after the attempt stopped)`;
    await store(() => ledger.release(effectKey, row.attempt, why));
    return 'claim_again';
  }

  /** Claimed and never started: nothing happened, so the row is freed for this call to claim. */
  async function takeOverUnstarted(row: EffectRow): Promise<'claim_again'> {
    const why = rules.unstartedNote ?? `${NOT_DONE}: an earlier attempt stopped before starting it`;
    // Only while it is still not started: its attempt may have woken and started meanwhile.
    await store(() => ledger.release(effectKey, row.attempt, why, { unstartedOnly: true }));
    return 'claim_again';
  }
}

async function store<R>(query: () => Promise<R>): Promise<R> {
  try {
    return await query();
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new EffectLedgerUnavailable(error);
  }
}

function ignore(): void {}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
