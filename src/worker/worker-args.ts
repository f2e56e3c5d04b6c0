// The worker entry's own arguments: `--processes N|auto` (a supervisor of N workers, src/worker/supervisor.ts)
// and `--process-index I`, which the supervisor gives each child so its logs say which one it is. Pure, so
// the bin refuses a bad value before loading anything (bin/commands.ts).
export const MAX_PROCESSES = 64;

export interface WorkerArgs {
  /** Absent: this process is one worker. */
  processes?: number;
  /** Set on a supervised child. */
  processIndex?: number;
}

/** `N` (1–64) or `auto`: one per core the process may use. */
export function parseProcesses(value: string | undefined, cores: number): number | string {
  if (value === 'auto') return Math.max(1, Math.min(MAX_PROCESSES, cores));
  const n = /^\d+$/.test(value ?? '') ? Number(value) : NaN;
  if (!(n >= 1 && n <= MAX_PROCESSES))
    return `--processes takes 1-${MAX_PROCESSES} or auto, not ${value ?? 'nothing'}`;
  return n;
}

/** `--flag value` or `--flag=value`; a string is the refusal, naming what is wrong. */
export function parseWorkerArgs(args: readonly string[], cores: number): WorkerArgs | string {
  const parsed: WorkerArgs = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (flag === '--processes') {
      const n = parseProcesses(value, cores);
      if (typeof n === 'string') return n;
      parsed.processes = n;
    } else if (flag === '--process-index' && /^\d+$/.test(value ?? '')) {
      parsed.processIndex = Number(value);
    } else {
      return `unknown argument ${arg} (only --processes N|auto)`;
    }
  }
  return parsed;
}
