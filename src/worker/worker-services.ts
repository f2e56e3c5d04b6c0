// What a worker hands the tool sources of its fleet configuration when it opens them at start.
import type { Pool } from 'mysql2/promise';
import type { Env } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import { EffectLedger, type EffectLedgerOptions } from '../effects/effect-ledger.js';
import type { SweepOutcome } from '../tools/send-email.js';

export interface WorkerServices {
  /** The fleet's own store (ledgers, runs). */
  store: Pool;
  /**
   * The same store on a pool that runs several statements in one query, for the effect ledger's own SQL (built
   * with placeholders): the capped claims of a reply's parallel calls then take one round trip together, and
   * their done records one more (docs/side-effects.md). Absent: `store`, one statement each, records awaited.
   */
  effectStore?: Pool;
  env: Env;
  logger: Logger;
  onEmailSettled?: (outcome: SweepOutcome) => void;
}

/** The pool and options of the services' effect ledger (one place that knows about `effectStore`). */
export function effectLedgerPool(services: WorkerServices): { pool: Pool; options: EffectLedgerOptions } {
  return services.effectStore
    ? { pool: services.effectStore, options: { multipleStatements: true, deferDone: true } }
    : { pool: services.store, options: {} };
}

/** The effect ledger on the services' store. */
export function effectLedgerOf(services: WorkerServices): EffectLedger {
  const { pool, options } = effectLedgerPool(services);
  return new EffectLedger(pool, options);
}
