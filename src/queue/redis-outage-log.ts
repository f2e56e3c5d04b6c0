// During a Redis outage every queue, worker and connection of a process reports every failed reconnection:
// dozens of errors a second. This turns them into one warning when the outage starts and one line when it
// ends; errors that are not about the connection are still logged one by one, as errors.
import type { RedisClient } from './redis.js';
import type { Logger } from '../logging/logger.js';
import { SOCKET_FAILURE_CODES } from '../util/socket-errors.js';

/** Anything that emits `error`: BullMQ's Queue, Worker, QueueEvents, FlowProducer; an ioredis client. */
export interface ErrorEmitter {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** ioredis names for "the connection is gone" (its errors of this kind carry no code). */
const CONNECTION_ERROR_NAMES = new Set(['MaxRetriesPerRequestError']);
const CONNECTION_CLOSED = 'Connection is closed.';

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = codeOf(error);
  if (code !== undefined) return SOCKET_FAILURE_CODES.has(code);
  return CONNECTION_ERROR_NAMES.has(error.name) || error.message === CONNECTION_CLOSED;
}

export class RedisOutageLog {
  private downSince: number | undefined;
  private errorsInOutage = 0;
  private settling: NodeJS.Timeout | undefined;
  private readonly connections: RedisClient[] = [];

  /**
   * @param settleMs the outage is over once a watched connection is ready and this long has passed without
   *   another connection error (the process's other connections reconnect a moment later).
   */
  constructor(
    private readonly logger: Logger,
    private readonly settleMs = 1_000,
  ) {}

  /** Routes an emitter's errors here; `source` names it in the line of an error that is not an outage. */
  watch(emitter: ErrorEmitter, source: string): this {
    emitter.on('error', (error) => this.onError(error, source));
    return this;
  }

  /** Like watch, and this connection being ready again is what ends an outage. */
  watchConnection(redis: RedisClient, source = 'redis'): this {
    this.connections.push(redis);
    this.watch(redis, source);
    redis.on('ready', () => {
      if (this.down) this.settleLater();
    });
    return this;
  }

  get down(): boolean {
    return this.downSince !== undefined;
  }

  private onError(error: Error, source: string): void {
    if (!isConnectionError(error)) {
      this.logger.error({ err: error }, `${source} error`);
      return;
    }
    this.errorsInOutage++;
    if (this.downSince === undefined) {
      this.downSince = Date.now();
      this.errorsInOutage = 1;
      // The code only: a stack trace says nothing about an unreachable server.
      this.logger.warn(
        { code: codeOf(error) ?? error.name, reason: error.message.split('\n')[0] },
        'redis unreachable: retrying until it is back',
      );
    }
    // A straggler's error after the reconnection postpones the end; with no connection up, its ready will.
    clearTimeout(this.settling);
    this.settling = undefined;
    if (this.anyConnectionReady()) this.settleLater();
  }

  private settleLater(): void {
    clearTimeout(this.settling);
    this.settling = setTimeout(() => {
      this.settling = undefined;
      if (this.downSince === undefined || !this.anyConnectionReady()) return;
      const downMs = Date.now() - this.downSince - this.settleMs;
      this.downSince = undefined;
      this.logger.info({ downMs, errors: this.errorsInOutage }, 'redis reachable again');
    }, this.settleMs);
    this.settling.unref();
  }

  private anyConnectionReady(): boolean {
    return this.connections.some((redis) => redis.status === 'ready');
  }
}
