// The table printed at the end and the JSON written to bench/results/.
export interface Row {
  scenario: string;
  figure: string;
  value: number;
  unit: string;
  baseline?: { label: string; value: number };
  ratio?: number;
  /** e.g. '≤ 1.5'; with `pass`, the row is judged. */
  target?: string;
  pass?: boolean;
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

export function renderTable(rows: readonly Row[]): string {
  const header = ['scenario', 'figure', 'value', 'unit', 'baseline', 'ratio', 'target', 'result'];
  const cells = rows.map((row) => [
    row.scenario,
    row.figure,
    formatNumber(row.value),
    row.unit,
    row.baseline ? `${formatNumber(row.baseline.value)} (${row.baseline.label})` : '',
    row.ratio === undefined ? '' : row.ratio.toFixed(2),
    row.target ?? '',
    row.pass === undefined ? '' : row.pass ? 'PASS' : 'FAIL',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const numeric = new Set([2, 5]);
  const line = (values: string[]) =>
    values.map((v, i) => (numeric.has(i) ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join(' | ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...cells.map(line)].join('\n');
}
