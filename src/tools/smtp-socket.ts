// The TCP connection nodemailer talks SMTP over, opened here (its `getSocket` hook) so that its writes coalesce.
// nodemailer writes a message to the socket chunk by chunk and each command on its own; on a pooled connection
// that was six system calls an email, each waking the server. With the writes of a turn of the event loop
// leaving together (src/util/coalesce-socket-writes.ts) the message goes out in one or two. Everything else
// (TLS for smtps:// and STARTTLS, the greeting, timeouts past the connect, error reading) stays nodemailer's.
import net from 'node:net';
import { coalesceSocketWrites } from '../util/coalesce-socket-writes.js';

/** What nodemailer passes to `getSocket`: its parsed connection options. */
export interface SmtpSocketRequest {
  host?: string;
  port?: number | string;
  secure?: boolean;
  localAddress?: string;
  connectionTimeout?: number;
}

type SocketCallback = (error: Error | null, socketOptions?: { connection: net.Socket }) => void;

const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;

/**
 * nodemailer's `getSocket`: a connected socket whose writes coalesce, or the connect's error as Node reports it
 * (ECONNREFUSED, ENOTFOUND: nodemailer's own errors for an unreachable server carry the same codes, which
 * classifySendError reads as "not sent"), or an ETIMEDOUT connect timeout like nodemailer's own.
 */
export function openSmtpSocket(request: SmtpSocketRequest, callback: SocketCallback): void {
  const port = Number(request.port) || (request.secure ? 465 : 587);
  const socket = net.connect({
    host: request.host || 'localhost',
    port,
    ...(request.localAddress ? { localAddress: request.localAddress } : {}),
  });
  let settled = false;
  const settle = (error: Error | null) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    if (error) {
      socket.destroy();
      callback(error);
      return;
    }
    coalesceSocketWrites(socket);
    callback(null, { connection: socket });
  };
  // Kept after the connect (a no-op then): an error between the hand-over and nodemailer's own listeners
  // must not go unheard and end the process.
  const onError = (error: Error) => settle(error);
  const timer = setTimeout(
    () =>
      settle(
        Object.assign(new Error('Connection timeout'), {
          code: 'ETIMEDOUT',
          timeoutType: 'CONNECT_TIMEOUT',
        }),
      ),
    request.connectionTimeout ?? DEFAULT_CONNECTION_TIMEOUT_MS,
  );
  socket.on('error', onError);
  socket.once('connect', () => settle(null));
}
