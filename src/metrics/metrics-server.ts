// Serving FleetMetrics to Prometheus: a tiny node:http server for processes without one (the worker), and a
// handler to mount on an express app that already listens (the API).
//   GET|HEAD /metrics   200, the Prometheus text format
//   /metrics otherwise  405
//   anything else       404
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import type { FleetMetrics } from './fleet-metrics.js';

export const METRICS_PATH = '/metrics';

export interface MetricsServerOptions {
  /** 0 picks a free port (see `port` on the result). */
  port: number;
  /**
   * How many ports from `port` on may be tried, in order, when one is taken: several workers on one host share
   * one METRICS_PORT and each gets the next free one (METRICS_PORT_SPAN). Default 1: `port` or nothing.
   */
  span?: number;
  /** Default: 127.0.0.1, this machine only; METRICS_HOST=0.0.0.0 lets Prometheus reach it from elsewhere. */
  host?: string;
}

export interface MetricsServer {
  server: Server;
  /** The port listened on (the actual one when 0 was asked for). */
  port: number;
  /** Stops listening and drops open (keep-alive) connections. Safe to call twice. */
  close(): Promise<void>;
}

/** The error of a worker whose every metrics port is taken; it names the variables to change. */
export class MetricsPortsTakenError extends Error {
  constructor(first: number, last: number) {
    const ports = first === last ? `port ${first} is` : `ports ${first}-${last} are all`;
    super(
      `METRICS_PORT: ${ports} in use on this host (EADDRINUSE); raise METRICS_PORT_SPAN, choose another METRICS_PORT, or set METRICS_PORT=0 to run without metrics`,
    );
    this.name = 'MetricsPortsTakenError';
  }

  readonly code = 'EADDRINUSE';
}

/**
 * Listens on `port`, or on the first free one of the `span` ports from it; rejects with MetricsPortsTakenError
 * when all are in use, with the listen error for anything else (EACCES…).
 */
export async function startMetricsServer(
  metrics: FleetMetrics,
  options: MetricsServerOptions,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== METRICS_PATH) {
      sendText(res, 404, 'not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendText(res, 405, 'method not allowed\n');
      return;
    }
    writeMetrics(metrics, req, res).catch(() => {
      if (res.headersSent) res.destroy();
      else sendText(res, 500, 'metrics unavailable\n');
    });
  });
  server.keepAliveTimeout = 5_000;

  const span = options.port === 0 ? 1 : Math.max(1, Math.min(options.span ?? 1, 65_536 - options.port));
  for (let i = 0; ; i++) {
    try {
      await listen(server, options.port + i, options.host ?? '127.0.0.1');
      break;
    } catch (error) {
      const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (!inUse) throw error;
      if (i + 1 >= span) throw new MetricsPortsTakenError(options.port, options.port + i);
    }
  }

  let closing: Promise<void> | undefined;
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      })),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * An express handler answering with the metrics, to mount at /metrics: `app.get('/metrics',
 * metricsHandler(metrics))`. A failure goes to the app's error handler.
 */
export function metricsHandler(
  metrics: FleetMetrics,
): (req: Request, res: Response, next: NextFunction) => Promise<void> {
  return async (req, res, next) => {
    try {
      await writeMetrics(metrics, req, res);
    } catch (error) {
      next(error);
    }
  };
}

async function writeMetrics(metrics: FleetMetrics, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await metrics.metrics();
  res.statusCode = 200;
  res.setHeader('Content-Type', metrics.contentType);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Cache-Control', 'no-store');
  res.end(req.method === 'HEAD' ? undefined : body);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
