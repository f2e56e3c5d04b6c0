// What the recorded runs of one agent and model cost: the forecast reads it, the store (src/store/run-history.ts)
// computes it. Its own module, so the client's forecast never reaches the store's driver.
export interface CostHistory {
  /** Finished runs in the window. */
  runs: number;
  /** Nearest-rank quantiles of per-run cost: the ⌈p·n⌉-th smallest cost. Null without runs. */
  p50Usd: number | null;
  p90Usd: number | null;
  meanUsd: number | null;
}

export const NO_HISTORY: CostHistory = { runs: 0, p50Usd: null, p90Usd: null, meanUsd: null };
