// The port tool sources open with (ToolSource<ToolServices>): what a process that serves tools hands them at
// start. Owned here, so the tools depend on no worker module; the worker fills it in (worker-services.ts).
import type { Pool } from 'mysql2/promise';
import type { Env } from '../../config/env.js';
import type { EffectStores } from '../effects/effect-ledger-of.js';
import type { Logger } from '../logging/logger.js';
import type { SweepOutcome } from './send-email.js';

export interface ToolServices extends EffectStores {
  /** The fleet's own store (ledgers, runs). */
  store: Pool;
  env: Env;
  logger: Logger;
  /** Each email the effect sweeper settles (for metrics). */
  onEmailSettled?: (outcome: SweepOutcome) => void;
}
