// ToolContext.once on the effect ledger: the effect runs at most once per job, call and key. The row is claimed
// and marked started in one write, the effect runs, its value is recorded. A later attempt that finds the row:
//   done       gets the recorded value back
//   pending    an earlier attempt may still be running it, or stopped before recording it. Without a lookup
//              the effect is reported uncertain at once, never run again. With the tool's lookup, the call
//              waits while the row is young (its attempt may be alive), then asks: happened, the value is
//              recorded and returned; did not, the row is taken over and the effect made now.
//   uncertain  as pending, past the wait.
// A throwing effect frees its row (`failed`): a throw means nothing happened, and a later attempt may try again.
import { ToolError } from '../kernel/errors.js';
import { sleep } from '../kernel/sleep.js';
import { effectKeyOf, NOT_DONE, type EffectLedger, type EffectRow } from './effect-ledger.js';
import type { EffectHooks, OnceOptions, PendingEffect } from '../kernel/tool.js';

export const DEFAULT_PENDING_GRACE_MS = 120_000;
const PENDING_POLL_MS = 1_000;
/** Rounds of settle-and-claim-again before a call stops: each round is a takeover by this call. */
const MAX_ROUNDS = 3;

/** What `once` throws when the effect may have happened and nothing could tell: it is not run again. */
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

export interface OnceCall {
  callKey: string;
  jobId: string;
  tool: string;
  signal: AbortSignal;
}

/** The options `ctx.once` takes: a key (the old form) or `{ key, ref }`. */
export function onceOptionsOf(option: string | OnceOptions | undefined): OnceOptions {
  return typeof option === 'string' ? { key: option } : (option ?? {});
}

export function pendingEffectOf(row: EffectRow): PendingEffect {
  return { effectKey: row.effectKey, jobId: row.jobId, tool: row.tool, ref: row.ref };
}

export async function runOnce<T>(
  ledger: EffectLedger,
  call: OnceCall,
  effect: () => Promise<T>,
  options: OnceOptions = {},
  hooks: EffectHooks = {},
): Promise<T> {
  const effectKey = effectKeyOf(call.callKey, options.key);
  const graceMs = hooks.pendingGraceMs ?? DEFAULT_PENDING_GRACE_MS;

  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const claim = await store(() =>
      ledger.claim({
        effectKey,
        jobId: call.jobId,
        tool: call.tool,
        started: true,
        ...(options.ref !== undefined ? { ref: options.ref } : {}),
        ...(hooks.maxPerJob !== undefined ? { maxPerJob: hooks.maxPerJob } : {}),
      }),
    );
    switch (claim.kind) {
      case 'cap_reached':
        throw new ToolError(
          'effect_cap_reached',
          `this run already has ${claim.count} effects of ${call.tool}, the most one run may have ` +
            `(maxPerJob ${hooks.maxPerJob}); nothing was done`,
        );
      case 'done':
        return claim.row.result as T;
      case 'new':
        return make(claim.attempt);
      case 'pending': {
        const settled = await settle(claim.row);
        if (settled !== 'claim_again') return settled.value as T;
      }
    }
  }
  throw new EffectUncertainError(effectKey, 'other attempts of this call kept taking it over');

  async function make(attempt: number): Promise<T> {
    let value: T;
    try {
      value = await effect();
    } catch (error) {
      const why = `${NOT_DONE}: the effect threw (${error instanceof Error ? error.message : String(error)})`;
      await ledger.release(effectKey, attempt, why).catch(() => undefined);
      throw error;
    }
    // If this write fails the row stays pending and started: the effect is then settled by the lookup or
    // reported uncertain, never made twice.
    await store(() => ledger.markDone(effectKey, value));
    return value;
  }

  /** A row another attempt holds or left: its value, or 'claim_again' once the row is free to claim. */
  async function settle(found: EffectRow): Promise<{ value: unknown } | 'claim_again'> {
    const lookup = hooks.lookup;
    let row = found;
    if (!lookup) {
      // Nothing to ask, so nothing to wait for: only a row proven never started, and old enough that its
      // attempt is gone, is taken over; any other is reported now.
      if (row.status === 'pending' && row.startedAt === null && row.ageMs >= graceMs) {
        return takeOverUnstarted(row);
      }
      throw new EffectUncertainError(effectKey);
    }
    while (row.status === 'pending' && row.ageMs < graceMs) {
      const wait = Math.min(PENDING_POLL_MS, graceMs - row.ageMs);
      try {
        await sleep(wait, call.signal);
      } catch {
        throw new EffectUncertainError(
          effectKey,
          'the call was stopped while an earlier attempt still held it',
        );
      }
      // A ledger that does not answer ages the row by the wait, so the wait still ends.
      const waited = row;
      const now = await ledger.get(effectKey).catch(() => ({ ...waited, ageMs: waited.ageMs + wait }));
      if (now === null || now.status === 'failed') return 'claim_again';
      if (now.status === 'done') return { value: now.result };
      row = now;
    }
    if (row.status === 'pending' && row.startedAt === null) return takeOverUnstarted(row);
    let answer;
    try {
      answer = await lookup(pendingEffectOf(row), call.signal);
    } catch (error) {
      const why = `the lookup failed (${error instanceof Error ? error.message : String(error)})`;
      // Only the attempt judged: one that took the row over meanwhile may be making the effect now.
      await ledger.markUncertain(effectKey, why, row.attempt).catch(() => undefined);
      throw new EffectUncertainError(effectKey, why);
    }
    if (answer.happened) {
      const value = answer.value ?? null;
      await store(() => ledger.markDone(effectKey, value));
      return { value };
    }
    await store(() =>
      ledger.release(effectKey, row.attempt, `${NOT_DONE} (lookup after the attempt stopped)`),
    );
    return 'claim_again';
  }

  /** Claimed and never started: nothing happened, so the row is freed for this call to claim. */
  async function takeOverUnstarted(row: EffectRow): Promise<'claim_again'> {
    const why = `${NOT_DONE}: an earlier attempt stopped before starting it`;
    await store(() => ledger.release(effectKey, row.attempt, why, { unstartedOnly: true }));
    return 'claim_again';
  }
}

async function store<R>(query: () => Promise<R>): Promise<R> {
  try {
    return await query();
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError('effect_ledger_unavailable', 'the effect ledger could not be read or written', {
      transient: true,
      cause: error,
    });
  }
}
