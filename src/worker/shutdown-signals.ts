// SIGTERM/SIGINT for a long-running process. The first one starts the graceful stop; later ones never cut it
// short: a terminal's Ctrl-C reaches both npm and the process, and npm forwards it again, so one key press can
// arrive twice. A third signal asks to stop waiting (`hurry`), and the process still stops the graceful way.
import type { Logger } from '../logging/logger.js';

export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

export interface ShutdownSignalOptions {
  logger: Logger;
  /** The graceful stop; the process exits 0 when it resolves, 1 when it rejects. */
  stop: () => Promise<void>;
  /** Called on the third signal: give up waiting for running work (it must still be saved). */
  hurry?: () => void;
  exit?: (code: number) => void;
}

/** Installs the handlers; returns a function that removes them (tests, in-process workers). */
export function handleShutdownSignals(options: ShutdownSignalOptions): () => void {
  const { logger, stop, hurry } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      logger.info({ signal }, 'shutting down');
      stop().then(
        () => exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          exit(1);
        },
      );
    } else if (received === 3 && hurry) {
      logger.info({ signal }, 'shutdown already in progress: not waiting any longer');
      hurry();
    } else {
      const hint = hurry && received === 2 ? ' (a third signal stops waiting for running jobs)' : '';
      logger.info({ signal }, `shutdown already in progress${hint}`);
    }
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
  return () => {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, onSignal);
  };
}
