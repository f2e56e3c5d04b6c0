// The supervisor as a process: reads the environment the children will get (a bad value fails once here with
// one line, not N times in a restart loop), starts them and handles SIGTERM/SIGINT the way a worker does: the
// first stops every child gracefully, a repeat is ignored (one Ctrl-C under npm arrives twice), a third asks each
// child to stop waiting for its running jobs, which it releases, saved, as a worker does on its own third.
import { env as readEnv } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import { scrubText } from '../logging/redact.js';
import { handleShutdownSignals } from './shutdown-signals.js';
import { startSupervisor, type Supervisor } from './supervisor.js';

/**
 * A child's own stop takes up to twice its grace plus its margins (running jobs, then side effects in flight,
 * then connections: worker-process.ts); past that and a little more, it is not stopping.
 */
const STOP_SLACK_MS = 20_000;

export function runSupervisor(options: { processes: number; entry: string; logger: Logger }): Supervisor {
  const { logger, processes } = options;
  let config;
  try {
    config = readEnv();
    if (config.METRICS_PORT + processes - 1 > 65535)
      throw new Error(
        `METRICS_PORT=${config.METRICS_PORT} leaves no port for each of ${processes} processes`,
      );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error }, message);
    process.stderr.write(`worker: ${scrubText(message)}\n`);
    process.exit(1);
  }
  const supervisor = startSupervisor({
    processes,
    entry: options.entry,
    metricsPort: config.METRICS_PORT,
    stopTimeoutMs: 2 * config.WORKER_SHUTDOWN_GRACE_MS + STOP_SLACK_MS,
    logger,
    // Every child reads the same configuration: the others stop too, and the supervisor exits 1, so that what
    // runs it (systemd, a container) sees the failure instead of a process restarting children forever.
    onConfigError: () => {
      void supervisor.stop().finally(() => process.exit(1));
    },
  });
  handleShutdownSignals({
    logger,
    stop: async () => {
      if (!(await supervisor.stop())) throw new Error('a worker process did not stop cleanly');
      logger.info('all worker processes stopped');
    },
    hurry: () => {
      logger.warn('asking every worker process to release its running jobs now');
      supervisor.hurry();
    },
  });
  return supervisor;
}
