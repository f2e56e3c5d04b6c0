// The cost history of finished runs (agent_runs), for the batch forecast: per agent and model, how many runs
// finished since a given time and what they cost, as nearest-rank quantiles. The ranking is done by the
// server over the index (agent, model, finished_at) of migration 008, so a month of runs never crosses the wire.
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { parseRow } from './rows.js';

/** What the runs of one agent and model cost, each run's `cost_usd` counted once. */
export interface CostHistory {
  /** Finished runs in the window. */
  runs: number;
  /** Nearest-rank quantiles of per-run cost: the ⌈p·n⌉-th smallest cost. Null without runs. */
  p50Usd: number | null;
  p90Usd: number | null;
  meanUsd: number | null;
}

export const NO_HISTORY: CostHistory = { runs: 0, p50Usd: null, p90Usd: null, meanUsd: null };

const rankedRow = z.object({
  n: z.coerce.number().int(),
  mean_usd: z.coerce.number(),
  rn: z.coerce.number().int(),
  cost_usd: z.coerce.number(),
});

// No agent_runs yet (a store no worker has migrated) or none with the agent column (before 008): no history.
const NO_SUCH_TABLE = 1146;
const NO_SUCH_COLUMN = 1054;

export class RunHistory {
  constructor(private readonly pool: Pool) {}

  /** Runs of `agent` on `model` finished at or after `since` (any status: a failed run was billed too). */
  async costHistory(agent: string, model: string, since: Date): Promise<CostHistory> {
    let rows: RowDataPacket[];
    try {
      [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT n, mean_usd, rn, cost_usd FROM (
           SELECT cost_usd,
             ROW_NUMBER() OVER (ORDER BY cost_usd) AS rn,
             COUNT(*) OVER () AS n,
             AVG(cost_usd) OVER () AS mean_usd
           FROM agent_runs
           WHERE agent = ? AND model = ? AND finished_at >= ? AND finished_at IS NOT NULL
         ) ranked
         WHERE rn = CEIL(0.5 * n) OR rn = CEIL(0.9 * n)`,
        [agent, model, since],
      );
    } catch (error) {
      const errno = (error as { errno?: unknown }).errno;
      if (errno === NO_SUCH_TABLE || errno === NO_SUCH_COLUMN) return NO_HISTORY;
      throw error;
    }
    const ranked = rows.map((row) => parseRow(rankedRow, row, 'agent_runs'));
    const first = ranked[0];
    if (!first) return NO_HISTORY;
    // The rank in integers, like the server's exact DECIMAL product: no float rounding at the boundary.
    const at = (tenths: number) =>
      ranked.find((row) => row.rn === Math.ceil((tenths * first.n) / 10))?.cost_usd ?? null;
    return { runs: first.n, p50Usd: at(5), p90Usd: at(9), meanUsd: first.mean_usd };
  }
}
