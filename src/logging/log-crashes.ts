// A process that dies of an uncaught error would have Node print the raw error with every field it holds
// (a driver's connection options, a command's arguments). Logged like any other line instead: redacted.
import type { Logger } from './logger.js';
import { scrubText } from './redact.js';

/** For a process's entry file: an uncaught exception or unhandled rejection is logged, then exit 1. */
export function logCrashes(logger: Logger, processName: string): void {
  const crash = (error: unknown) => {
    logger.fatal({ err: error }, 'crashed');
    logger.flush();
    // One clear line for a person, whatever the log format (as the start-up failures print).
    process.stderr.write(
      `${processName}: ${scrubText(error instanceof Error ? error.message : String(error))}\n`,
    );
    process.exit(1);
  };
  process.once('uncaughtException', crash);
  process.once('unhandledRejection', crash);
}
