// What a worker hands the tool sources of its fleet configuration when it opens them at start.
import type { Pool } from 'mysql2/promise';
import type { Env } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import type { SweepOutcome } from '../tools/send-email.js';

export interface WorkerServices {
  /** The fleet's own store (ledgers, runs). */
  store: Pool;
  env: Env;
  logger: Logger;
  onEmailSettled?: (outcome: SweepOutcome) => void;
}
