// Every worker process listens on the fleet's cancel channel: a cancel names a job, and the process running it (if
// any) aborts that run with CANCEL_REASON, which the processor ends as a final `cancelled` result, unlike a
// shutdown's abort, which releases the job. A process not running the job ignores the message; a job not yet taken
// meets its cancel mark when it is.
import type { RedisClient } from '../queue/redis.js';
import { cancelChannel } from '../queue/cancel-marks.js';
import type { Logger } from '../logging/logger.js';

/** The abort reason of a cancelled run: ended, not released (compare SHUTDOWN_REASON). */
export const CANCEL_REASON = 'task-cancelled';

export interface CancelWatch {
  close(): Promise<void>;
}

/**
 * Subscribes a connection of its own (a subscribed connection can run no other command) and aborts the named
 * jobs through `abort` (BullMQ's worker.cancelJob). Messages lost while Redis is away are covered by the marks.
 */
export async function watchCancels(
  connection: RedisClient,
  prefix: string,
  abort: (jobId: string, reason: string) => boolean,
  logger: Logger,
): Promise<CancelWatch> {
  const subscriber = connection.duplicate();
  subscriber.on('error', () => undefined); // the worker's own connection reports outages
  const channel = cancelChannel(prefix);
  subscriber.on('message', (from: string, jobId: string) => {
    if (from !== channel) return;
    if (abort(jobId, CANCEL_REASON)) logger.info({ jobId }, 'cancelled: stopping the run');
  });
  await subscriber.subscribe(channel);
  return {
    // Disconnected, not quit: a quit waits for Redis, which may be away while the worker shuts down.
    close() {
      subscriber.disconnect();
      return Promise.resolve();
    },
  };
}
