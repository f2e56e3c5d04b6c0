// Reading what bench/heap-probe.ts wrote.
import { readFileSync } from 'node:fs';

export interface ProbeLine {
  t: number;
  kind: 'tick' | 'gc' | 'nogc';
  seq: number;
  heapUsed: number;
  heapTotal: number;
  rss: number;
  external: number;
  arrayBuffers: number;
  /** tick lines only */
  elu?: number;
  delayMeanMs?: number;
  delayP99Ms?: number;
  delayMaxMs?: number;
}

export function readProbe(file: string): ProbeLine[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ProbeLine);
  } catch {
    return [];
  }
}

export interface LoopStats {
  /** Mean event-loop utilization (0..1) over the window. */
  elu: number;
  /** Mean of the per-250-ms mean timer delays, ms. */
  delayMeanMs: number;
  /** Median of the per-250-ms 99th percentiles, ms. */
  delayP99Ms: number;
  delayMaxMs: number;
}

export function loopStats(lines: readonly ProbeLine[], from: number, to: number): LoopStats {
  const ticks = lines.filter((l) => l.kind === 'tick' && l.t > from && l.t <= to && l.elu !== undefined);
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const p99s = ticks.map((l) => l.delayP99Ms ?? 0).sort((a, b) => a - b);
  return {
    elu: mean(ticks.map((l) => l.elu ?? 0)),
    delayMeanMs: mean(ticks.map((l) => l.delayMeanMs ?? 0)),
    delayP99Ms: p99s[Math.floor(p99s.length / 2)] ?? NaN,
    delayMaxMs: Math.max(0, ...ticks.map((l) => l.delayMaxMs ?? 0)),
  };
}
