// The worker entry's arguments and the supervisor's arithmetic: restart delays and metrics ports. Pure.
import { describe, expect, it } from 'vitest';
import { DEFAULT_RESTARTS, metricsPortOf, restartDelayMs } from '../../../src/worker/supervisor.js';
import { parseWorkerArgs } from '../../../src/worker/worker-args.js';

describe('worker arguments', () => {
  it('--processes N (1-64) or auto (one per core, capped), --process-index I for a supervised child', () => {
    expect(parseWorkerArgs([], 8)).toEqual({});
    expect(parseWorkerArgs(['--processes', '3'], 8)).toEqual({ processes: 3 });
    expect(parseWorkerArgs(['--processes=auto'], 8)).toEqual({ processes: 8 });
    expect(parseWorkerArgs(['--processes', 'auto'], 200)).toEqual({ processes: 64 });
    expect(parseWorkerArgs(['--process-index', '2'], 8)).toEqual({ processIndex: 2 });
  });

  it('refuses a bad count or an unknown flag, naming it', () => {
    for (const bad of ['0', '65', '1.5', 'many'])
      expect(parseWorkerArgs(['--processes', bad], 8)).toBe(`--processes takes 1-64 or auto, not ${bad}`);
    expect(parseWorkerArgs(['--processes'], 8)).toBe('--processes takes 1-64 or auto, not nothing');
    expect(parseWorkerArgs(['--threads', '2'], 8)).toBe(
      'unknown argument --threads (only --processes N|auto)',
    );
  });
});

describe('the supervisor', () => {
  it('doubles the restart delay with each quick exit in a row, up to the cap', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => restartDelayMs(n, DEFAULT_RESTARTS));
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  });

  it('gives child i the metrics port base + i, and none when the base is 0', () => {
    expect([0, 1, 2].map((i) => metricsPortOf(9464, i))).toEqual([9464, 9465, 9466]);
    expect(metricsPortOf(0, 3)).toBe(0);
  });
});
