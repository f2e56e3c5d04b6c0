// Settles the effect ledger's rows that nobody else will: a row left pending by an attempt that stopped (its
// worker died after the claim and the job never resumed, or the run ended with the effect uncertain), for every
// tool the fleet serves. Run by every worker at start and then periodically; each settlement is a conditional
// update, so workers sweeping at once agree. A row never started, or one the tool's lookup says did not
// happen, becomes `failed` with a "not done" note (a job that resumes later makes it; otherwise reports list
// it); one the lookup finds is recorded as done; one nothing can tell about becomes `uncertain`, looked at
// again on later sweeps while the tool has a lookup (one whose lookup failed after a wait: lookup-backoff.ts).
// The sweeper never makes an effect: only the call can.
import { withTimeout } from '../util/with-timeout.js';
import { NOT_DONE, type EffectLedger, type EffectRow } from './effect-ledger.js';
import { LookupBackoff } from './lookup-backoff.js';
import { DEFAULT_PENDING_GRACE_MS, pendingEffectOf } from './effect-once.js';
import type { EffectHooks, EffectSweepOutcome, Tool } from '../kernel/tool.js';

export interface SweeperLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A tool whose rows are swept, with its hooks. */
export interface SweptTool {
  tool: string;
  hooks: EffectHooks;
}

export interface EffectSweeperOptions {
  ledger: Pick<EffectLedger, 'listUnsettled' | 'release' | 'markDone' | 'markUncertain'>;
  tools: readonly SweptTool[];
  logger: SweeperLogger;
  /** Rows looked at per tool and sweep. Default 100. */
  batchSize?: number;
  /** A lookup that does not answer within this is a failed one. Default 30 s. */
  lookupTimeoutMs?: number;
  /**
   * Rows whose lookups failed lately, left out until their wait is over. Keep one across sweeps
   * (startEffectSweeper does); absent, a sweep backs off only within itself.
   */
  backoff?: LookupBackoff;
  /** No lookup starts after a sweep has run this long; the rest wait for the next sweep. Default 60 s. */
  sweepBudgetMs?: number;
}

const DEFAULT_SWEEP_BUDGET_MS = 60_000;

export type SweepCounts = Record<EffectSweepOutcome, number>;

/** The tools of a fleet whose effects are swept: every tool that is not readOnly. */
export function sweptToolsOf(tools: readonly Tool[]): SweptTool[] {
  return tools
    .filter((tool) => tool.readOnly !== true)
    .map((tool) => ({ tool: tool.name, hooks: tool.effects ?? {} }));
}

/** One pass over the unsettled rows. Never throws: a failing ledger is logged and the next sweep tries again. */
export async function sweepUnsettledEffects(options: EffectSweeperOptions): Promise<SweepCounts> {
  const counts: SweepCounts = { done: 0, not_done: 0, uncertain: 0 };
  const backoff = options.backoff ?? new LookupBackoff();
  const endsAt = Date.now() + (options.sweepBudgetMs ?? DEFAULT_SWEEP_BUDGET_MS);
  for (const swept of options.tools) {
    let rows: EffectRow[];
    try {
      rows = await options.ledger.listUnsettled(swept.hooks.pendingGraceMs ?? DEFAULT_PENDING_GRACE_MS, {
        tools: [swept.tool],
        uncertainOf: swept.hooks.lookup ? [swept.tool] : [],
        limit: options.batchSize ?? 100,
        skip: backoff.waiting(),
      });
    } catch (error) {
      options.logger.warn(
        { tool: swept.tool, err: messageOf(error) },
        'effect sweep: the ledger is unavailable',
      );
      return counts;
    }
    for (const row of rows) {
      // Settling without a lookup is one quick update; a lookup may take its whole time limit.
      const looksUp = swept.hooks.lookup && !(row.status === 'pending' && row.startedAt === null);
      if (looksUp && Date.now() >= endsAt) continue;
      try {
        const outcome = await settle(row, swept.hooks, options, backoff);
        if (outcome === null) continue;
        counts[outcome]++;
        report(outcome, row, swept.hooks, options.logger);
      } catch (error) {
        options.logger.warn(
          { tool: row.tool, effectKey: row.effectKey, err: messageOf(error) },
          'effect sweep: row not settled',
        );
      }
    }
  }
  return counts;
}

/** The row's outcome, or null when it changed meanwhile or stays as it was. */
async function settle(
  row: EffectRow,
  hooks: EffectHooks,
  options: EffectSweeperOptions,
  backoff: LookupBackoff,
): Promise<EffectSweepOutcome | null> {
  const { ledger } = options;
  if (row.status === 'pending' && row.startedAt === null) {
    const why = `${NOT_DONE}: its attempt stopped before starting it`;
    return (await ledger.release(row.effectKey, row.attempt, why, { unstartedOnly: true }))
      ? 'not_done'
      : null;
  }
  const lookup = hooks.lookup;
  if (!lookup) {
    const why = 'outcome unknown: the tool has no lookup';
    return (await ledger.markUncertain(row.effectKey, why, row.attempt)) ? 'uncertain' : null;
  }
  const timeoutMs = options.lookupTimeoutMs ?? 30_000;
  let answer;
  try {
    answer = await withTimeout((signal) => lookup(pendingEffectOf(row), signal), timeoutMs);
  } catch (error) {
    backoff.failed(row.effectKey);
    if (row.status === 'uncertain') return null;
    const why = `outcome unknown: the lookup failed (${messageOf(error)})`;
    return (await ledger.markUncertain(row.effectKey, why, row.attempt)) ? 'uncertain' : null;
  }
  backoff.forget(row.effectKey);
  if (answer.happened) {
    await ledger.markDone(row.effectKey, answer.value ?? null);
    return 'done';
  }
  const why = `${NOT_DONE} (the sweeper’s lookup found it did not happen)`;
  return (await ledger.release(row.effectKey, row.attempt, why)) ? 'not_done' : null;
}

function report(
  outcome: EffectSweepOutcome,
  row: EffectRow,
  hooks: EffectHooks,
  logger: SweeperLogger,
): void {
  if (hooks.onSwept) {
    hooks.onSwept(outcome, pendingEffectOf(row));
    return;
  }
  const fields = { tool: row.tool, jobId: row.jobId, effectKey: row.effectKey };
  if (outcome === 'done') logger.info(fields, 'effect sweep: it happened, recorded as done');
  else if (outcome === 'not_done') logger.warn(fields, 'effect sweep: it did not happen');
  else logger.warn(fields, 'effect sweep: its outcome cannot be known');
}

export interface EffectSweeper {
  close(): Promise<void>;
}

/** Sweeps now and then every `intervalMs`; one sweep at a time; close() waits for the one under way. */
export function startEffectSweeper(options: EffectSweeperOptions & { intervalMs: number }): EffectSweeper {
  let running: Promise<unknown> = Promise.resolve();
  const swept = {
    ...options,
    backoff: options.backoff ?? new LookupBackoff({ baseMs: Math.max(options.intervalMs, 1_000) }),
    sweepBudgetMs: options.sweepBudgetMs ?? options.intervalMs,
  };
  const sweep = () => {
    running = running.then(() => sweepUnsettledEffects(swept));
  };
  sweep();
  const timer = setInterval(sweep, options.intervalMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
