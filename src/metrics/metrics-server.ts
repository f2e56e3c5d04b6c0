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
export const DEFAULT_METRICS_PORT = 9464;

export interface MetricsServerOptions {
  /** 0 picks a free port (see `port` on the result). */
  port: number;
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

/** Listens on `port`; rejects when it cannot (EADDRINUSE…). */
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

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', onError);
      resolve();
    });
  });

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
