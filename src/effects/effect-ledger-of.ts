// Which pool the effect ledger runs on, in one place: the multi-statement pool when the process has one (the
// capped claims of a reply's parallel calls then take one round trip together, and their done records one
// more: docs/side-effects.md), else the store's, one statement each and every record awaited.
import type { Pool } from 'mysql2/promise';
import { EffectLedger, type EffectLedgerOptions } from './effect-ledger.js';

export interface EffectStores {
  store: Pool;
  /**
   * The same store on a pool that runs several statements in one query, for the effect ledger's own SQL (built
   * with placeholders). Absent: `store`.
   */
  effectStore?: Pool;
}

/** The pool and options of the effect ledger on these stores. */
export function effectLedgerPool(stores: EffectStores): { pool: Pool; options: EffectLedgerOptions } {
  return stores.effectStore
    ? { pool: stores.effectStore, options: { multipleStatements: true, deferDone: true } }
    : { pool: stores.store, options: {} };
}

/** The effect ledger on these stores. */
export function effectLedgerOf(stores: EffectStores): EffectLedger {
  const { pool, options } = effectLedgerPool(stores);
  return new EffectLedger(pool, options);
}
