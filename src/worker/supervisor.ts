// `agent-fleet worker --processes N`: N worker processes under one supervisor. A worker is one Node.js thread
// and is CPU-bound past about 1,000 model calls a second, so a machine's other cores need processes of their
// own. Each child is the same worker entry, forked, with its own metrics port and its index in its logs. The
// supervisor runs no job: it restarts a child that exits (or could not be started), passes SIGTERM/SIGINT on,
// and exits once all have.
import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from '../logging/logger.js';

export interface RestartPolicy {
  /** The first restart's delay; each further quick exit in a row doubles it, up to maxMs. */
  baseMs: number;
  maxMs: number;
  /** A child that ran this long before exiting starts the count afresh. */
  stableMs: number;
  /** Quick exits in a row from which the child is reported as crash-looping (and still restarted). */
  crashLoopAfter: number;
}

export const DEFAULT_RESTARTS: RestartPolicy = {
  baseMs: 1_000,
  maxMs: 30_000,
  stableMs: 60_000,
  crashLoopAfter: 5,
};

/** The delay before restarting a child after its `failures`-th quick exit in a row (1, 2, …). */
export function restartDelayMs(failures: number, policy: RestartPolicy): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failures - 1));
}

/** Child i's metrics port: the base + i, or 0 (none) when the base is 0. */
export function metricsPortOf(base: number, index: number): number {
  return base === 0 ? 0 : base + index;
}

export interface SupervisorOptions {
  processes: number;
  /** The worker entry's file, forked as each child with `--process-index I`. */
  entry: string;
  /** Node's flags for the children (default the supervisor's own, e.g. `--import tsx`). */
  execArgv?: string[];
  /** The Node.js binary the children run (default the supervisor's own). */
  execPath?: string;
  env?: NodeJS.ProcessEnv;
  /** METRICS_PORT: child i serves base + i (pinned: METRICS_PORT_SPAN=1); 0 serves none. */
  metricsPort: number;
  /** How long a graceful stop may take before the children left are killed. */
  stopTimeoutMs: number;
  logger: Logger;
  restarts?: Partial<RestartPolicy>;
  /** A child exited with CONFIG_EXIT_CODE: it is not started again (the process should stop and say so). */
  onConfigError?: (index: number) => void;
}

export interface Supervisor {
  /** The running children's pids, by index (undefined while one waits to restart). */
  pids(): (number | undefined)[];
  /** SIGTERM to every child; true when all exited 0 within stopTimeoutMs (the rest are then killed). */
  stop(): Promise<boolean>;
  /**
   * Asks every child to stop waiting for its running jobs: each releases them, saved, as a worker does on its
   * third signal (HURRY_MESSAGE over the IPC channel fork() opened).
   */
  hurry(): void;
  /** SIGKILL to every child (a stop that should not wait any longer). */
  kill(): void;
}

/** What the supervisor sends a child it asks to hurry (workers/agent-worker.ts listens for it). */
export const HURRY_MESSAGE = 'agent-fleet:hurry';

/**
 * A supervised child's exit code for a configuration error (a model without a price, a fleet configuration that
 * does not load), as sysexits' EX_CONFIG: starting it again cannot help, so the supervisor gives up.
 */
export const CONFIG_EXIT_CODE = 78;

interface Slot {
  index: number;
  child?: ChildProcess;
  startedAt: number;
  failures: number;
  restart?: NodeJS.Timeout;
  exited?: Promise<boolean>;
}

export function startSupervisor(options: SupervisorOptions): Supervisor {
  const { logger } = options;
  const policy = { ...DEFAULT_RESTARTS, ...options.restarts };
  const slots: Slot[] = Array.from({ length: options.processes }, (_, index) => ({
    index,
    startedAt: 0,
    failures: 0,
  }));
  let stopping: Promise<boolean> | undefined;

  const start = (slot: Slot) => {
    slot.restart = undefined;
    slot.startedAt = Date.now();
    const port = metricsPortOf(options.metricsPort, slot.index);
    let child: ChildProcess;
    try {
      child = fork(options.entry, ['--process-index', String(slot.index)], {
        execArgv: options.execArgv ?? process.execArgv,
        ...(options.execPath ? { execPath: options.execPath } : {}),
        env: { ...(options.env ?? process.env), METRICS_PORT: String(port), METRICS_PORT_SPAN: '1' },
        stdio: 'inherit',
      });
    } catch (err) {
      logger.error({ processIndex: slot.index, err }, 'worker process could not be started');
      if (!stopping) scheduleRestart(slot, null, null);
      return;
    }
    slot.child = child;
    let resolveExited!: (clean: boolean) => void;
    slot.exited = new Promise((resolve) => (resolveExited = resolve));
    // Once, whichever tells first: a child that could not be started at all (no binary, no memory, no pids left)
    // emits 'error' and never 'exit', and its slot must still restart, and a stop must not wait for it.
    let gone = false;
    const onGone = (code: number | null, signal: NodeJS.Signals | null) => {
      if (gone) return;
      gone = true;
      slot.child = undefined;
      // Killed by our SIGTERM, or by a terminal's SIGINT, before its handlers were in place (they are installed
      // as it starts taking jobs): it had none, so that is a clean stop too.
      resolveExited(code === 0 || (stopping !== undefined && (signal === 'SIGTERM' || signal === 'SIGINT')));
      if (stopping) return;
      if (code === CONFIG_EXIT_CODE) {
        logger.error(
          { processIndex: slot.index, code },
          `worker process ${slot.index} stopped on a configuration error (its own line above says which): ` +
            'not starting it again',
        );
        options.onConfigError?.(slot.index);
      } else {
        scheduleRestart(slot, code, signal);
      }
    };
    child.once('exit', onGone);
    child.on('error', (err) => {
      logger.error({ processIndex: slot.index, err }, 'worker process error');
      if (child.pid === undefined) onGone(null, null);
    });
    logger.info(
      { processIndex: slot.index, childPid: child.pid, metricsPort: port },
      'worker process started',
    );
  };

  const scheduleRestart = (slot: Slot, code: number | null, signal: NodeJS.Signals | null) => {
    const ranMs = Date.now() - slot.startedAt;
    slot.failures = ranMs >= policy.stableMs ? 1 : slot.failures + 1;
    const delayMs = restartDelayMs(slot.failures, policy);
    const how = signal ? `killed by ${signal}` : code === null ? 'could not start' : `exit code ${code}`;
    const fields = { processIndex: slot.index, code, signal, ranMs, failures: slot.failures, delayMs };
    if (slot.failures >= policy.crashLoopAfter) {
      logger.error(
        fields,
        `worker process ${slot.index} is crash-looping: ${slot.failures} exits in a row, each within ` +
          `${Math.round(policy.stableMs / 1000)} s of its start (last: ${how}); restarting in ${delayMs} ms`,
      );
    } else {
      logger.warn(fields, `worker process ${slot.index} exited (${how}): restarting in ${delayMs} ms`);
    }
    slot.restart = setTimeout(() => start(slot), delayMs);
  };

  const stop = async (): Promise<boolean> => {
    for (const slot of slots) clearTimeout(slot.restart);
    const running = slots.filter((slot) => slot.child);
    for (const slot of running) slot.child!.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.stopTimeoutMs);
    });
    const all = Promise.all(running.map((slot) => slot.exited!));
    const outcome = await Promise.race([all, timedOut]);
    clearTimeout(timer);
    if (outcome !== 'timeout') return outcome.every(Boolean);
    const late = slots.filter((slot) => slot.child).map((slot) => slot.index);
    logger.error(
      { processIndexes: late, stopTimeoutMs: options.stopTimeoutMs },
      `worker processes ${late.join(', ')} did not stop within ${options.stopTimeoutMs} ms: killing them`,
    );
    kill();
    await all;
    return false;
  };

  const kill = () => {
    for (const slot of slots) slot.child?.kill('SIGKILL');
  };

  const hurry = () => {
    for (const slot of slots) {
      // A child whose channel is already closed is on its way out; a send that fails leaves it to the timeout.
      if (slot.child?.connected)
        slot.child.send(
          HURRY_MESSAGE,
          (err) =>
            err && logger.warn({ processIndex: slot.index, err }, 'could not ask a worker process to hurry'),
        );
    }
  };

  for (const slot of slots) start(slot);
  logger.info({ processes: options.processes }, `supervising ${options.processes} worker processes`);
  return {
    pids: () => slots.map((slot) => slot.child?.pid),
    stop: () => (stopping ??= stop()),
    hurry,
    kill,
  };
}
