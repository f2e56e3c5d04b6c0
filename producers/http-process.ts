// What the API and the board have in common as processes: read the configuration or stop with one line,
// listen, and on SIGTERM/SIGINT stop accepting, let open requests finish within a grace period, release what
// they hold, exit 0.
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { env, type Env } from '../config/env.js';
import type { Logger } from '../src/logging/logger.js';

const SHUTDOWN_GRACE_MS = 10_000;

/** Logs one fatal line and exits 1: how a process refuses to start. */
export function fail(logger: Logger, message: string): never {
  logger.fatal(message);
  logger.flush();
  process.exit(1);
}

export function loadConfig(logger: Logger): Env {
  try {
    return env();
  } catch (error) {
    return fail(logger, error instanceof Error ? error.message : String(error));
  }
}

/** `http://127.0.0.1:3100`, `http://[::1]:3100`: the address as a URL. */
export function listenUrl(address: string, port: number): string {
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

export interface HttpProcessOptions {
  logger: Logger;
  app: RequestListener;
  /** The address to listen on (API_HOST, BOARD_HOST): what the log line says is what is listened on. */
  host: string;
  port: number;
  /** The variables the host and port came from, for the error when they cannot be listened on. */
  hostVariable: string;
  portVariable: string;
  /** Logged once listening, with the URL listened on. */
  listening: (url: string) => { fields: Record<string, unknown>; message: string };
  /** Releases what the process holds (Redis connections, queues) after the server closed. */
  release: () => Promise<void>;
}

export function runHttpProcess(options: HttpProcessOptions): void {
  const { logger } = options;
  const server = createServer(options.app);
  server.keepAliveTimeout = 5_000;
  server.once('error', (error) =>
    fail(
      logger,
      `cannot listen on ${options.hostVariable}=${options.host} ${options.portVariable}=${options.port}: ${error.message}`,
    ),
  );
  server.listen(options.port, options.host, () => {
    const { address, port } = server.address() as AddressInfo;
    const { fields, message } = options.listening(listenUrl(address, port));
    logger.info({ host: address, port, ...fields }, message);
  });

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('requests still open after the grace period; closing them');
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearTimeout(force);
    await options.release();
    logger.info('stopped');
    logger.flush();
    process.exit(0);
  };
  process.once('SIGTERM', (signal) => void shutdown(signal));
  process.once('SIGINT', (signal) => void shutdown(signal));
}
