// Every fault scenario prints its figures on one line, so the numbers quoted in docs/fault-suite.md can be
// read off any CI log.
export type Figures = Record<string, number | string | boolean>;

export function printFigures(scenario: string, figures: Figures): void {
  const fields = Object.entries(figures).map(([key, value]) => `${key}=${value}`);
  console.log(`[fault-suite] ${scenario}: ${fields.join(' ')}`);
}

/** Seconds with one decimal, for the figures line. */
export const seconds = (ms: number): string => (ms / 1000).toFixed(1);
