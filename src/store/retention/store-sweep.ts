// One pass of the store sweeper (docs/store.md#retention): runs left `running` by a crash are ended first (when
// the sweep is given the fleet's queue to ask), then step traces and settled effects (and send_email's old
// ledger's settled rows) older than STORE_KEEP_STEPS_DAYS, then runs and batches older than STORE_KEEP_RUNS_DAYS
// (0 keeps them). Each statement deletes at most
// batchSize rows and is followed by a pause at least as long as it took, so the sweeper holds at most half of
// one connection's time and its locks are short; the fleet's own writes go on between statements.
import type { Pool } from 'mysql2/promise';
import { pruneSteps } from './prune-steps.js';
import { pruneSettledEffects } from './prune-effects.js';
import { pruneRuns } from './prune-runs.js';
import { pruneBatchRows } from './prune-batch-rows.js';
import { pruneEmailLedger } from './prune-email-ledger.js';
import { settleAbandonedRuns, type RunJobLookup, type SettledRuns } from './abandoned-runs.js';
import { SWEEPER_SESSION, type PruneBatches, type Queryable } from './prune-batches.js';

export const DAY_MS = 86_400_000;
export const DEFAULT_SWEEP_BATCH = 1_000;
export const DEFAULT_SWEEP_PAUSE_MS = 50;
/** A progress line at most this often during a long sweep. */
const PROGRESS_EVERY_MS = 30_000;

export type SweptTable =
  | 'agent_steps'
  | 'effect_ledger'
  | 'agent_runs'
  | 'agent_approvals'
  | 'agent_batches'
  | 'batch_reports'
  | 'email_ledger';
export type SweepDeleted = Record<SweptTable, number>;

export interface StoreSweepLogger {
  info(fields: Record<string, unknown>, message: string): void;
}

export interface StoreSweepOptions {
  pool: Pool;
  keepStepsDays: number;
  /** 0: runs are kept forever. */
  keepRunsDays: number;
  logger: StoreSweepLogger;
  /** Rows per statement; default 1,000. */
  batchSize?: number;
  /** The least pause between statements; default 50 ms (and never less than the statement took). */
  pauseMs?: number;
  now?: () => Date;
  /** Called between statements; false stops the sweep (the lease is lost, the worker is stopping). */
  keepGoing?: () => Promise<boolean> | boolean;
  /**
   * The state of a run's job in the fleet's queue: with it, runs left `running` by a crash are ended
   * (abandoned-runs.ts); without it (no Redis at hand), they are left as they are.
   */
  jobState?: RunJobLookup;
  /** Rows deleted, as they go (the metrics). */
  onDeleted?: (table: SweptTable, rows: number) => void;
}

export type SweepOutcome = SweepDeleted & { runs_abandoned: number; runs_recorded: number; stopped: boolean };

export async function sweepStore(options: StoreSweepOptions): Promise<SweepOutcome> {
  const now = (options.now ?? (() => new Date()))();
  const pauseMs = options.pauseMs ?? DEFAULT_SWEEP_PAUSE_MS;
  const deleted: SweepDeleted = {
    agent_steps: 0,
    effect_ledger: 0,
    agent_runs: 0,
    agent_approvals: 0,
    agent_batches: 0,
    batch_reports: 0,
    email_ledger: 0,
  };
  const settled: SettledRuns = { abandoned: 0, recorded: 0 };
  let stopped = false;
  let lastProgress = Date.now();
  let statementStarted = Date.now();
  // A connection of its own, in the sweeper's isolation level, dropped after: the pool's others keep theirs.
  const connection = await options.pool.getConnection();
  try {
    await connection.query(SWEEPER_SESSION);
    await sweepOn(connection);
  } finally {
    connection.destroy();
  }
  return { ...deleted, runs_abandoned: settled.abandoned, runs_recorded: settled.recorded, stopped };

  async function sweepOn(session: Queryable): Promise<void> {
    const batchSize = options.batchSize ?? DEFAULT_SWEEP_BATCH;
    /** After each statement: a pause at least as long as it took, progress now and then, and whether to go on. */
    const pauseAndCheck = async (rows: number): Promise<boolean> => {
      if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
        lastProgress = Date.now();
        options.logger.info({ ...deleted }, 'store sweep: rows deleted so far');
      }
      const took = Date.now() - statementStarted;
      if (rows > 0) await sleep(Math.max(pauseMs, took));
      stopped = !(await (options.keepGoing?.() ?? true));
      statementStarted = Date.now();
      return !stopped;
    };
    const batches = (table: SweptTable): PruneBatches => ({
      pool: session,
      batchSize,
      async afterBatch(rows) {
        deleted[table] += rows;
        if (rows > 0) options.onDeleted?.(table, rows);
        return pauseAndCheck(rows);
      },
    });
    if (options.jobState) {
      const found = await settleAbandonedRuns(
        { pool: session, batchSize, afterBatch: pauseAndCheck },
        options.jobState,
        now,
      );
      settled.abandoned += found.abandoned;
      settled.recorded += found.recorded;
    }
    if (stopped) return;
    const stepsCutoff = new Date(now.getTime() - options.keepStepsDays * DAY_MS);
    await pruneSteps(batches('agent_steps'), stepsCutoff);
    if (!stopped) await pruneSettledEffects(batches('effect_ledger'), stepsCutoff);
    if (!stopped) await pruneEmailLedger(batches('email_ledger'), stepsCutoff);
    if (!stopped && options.keepRunsDays > 0) {
      const runsCutoff = new Date(now.getTime() - options.keepRunsDays * DAY_MS);
      await pruneRuns(
        { runs: batches('agent_runs'), steps: batches('agent_steps'), approvals: batches('agent_approvals') },
        runsCutoff,
      );
      if (!stopped) {
        await pruneBatchRows(
          { batches: batches('agent_batches'), reports: batches('batch_reports') },
          runsCutoff,
        );
      }
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
