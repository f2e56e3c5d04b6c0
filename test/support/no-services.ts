// Setup file of the unit project: a unit test must not reach Redis, MariaDB or an SMTP server. Any socket
// opened to their ports (or a MySQL/Redis unix socket) throws an error naming the test, and the test fails
// in afterEach even when the client swallows the error to retry (ioredis does), so it cannot pass by luck.
import net from 'node:net';
import path from 'node:path';
import { afterEach, expect } from 'vitest';

const SERVICE_PORTS = new Map<number, string>([
  [6379, 'Redis'],
  [3306, 'MariaDB'],
  [1025, 'SMTP'],
  [2525, 'SMTP'],
]);

const reached: string[] = [];

function target(args: unknown[]): { port?: number; path?: string } {
  // net.connect() hands the socket its already-normalized [options, callback] array.
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return { port: Number(first) };
  }
  if (typeof first === 'string') return { path: first };
  if (first && typeof first === 'object') {
    const options = first as { port?: unknown; path?: unknown };
    if (typeof options.path === 'string') return { path: options.path };
    if (options.port !== undefined) return { port: Number(options.port) };
  }
  return {};
}

function serviceOf({ port, path }: { port?: number; path?: string }): string | undefined {
  if (port !== undefined)
    return SERVICE_PORTS.has(port) ? `${SERVICE_PORTS.get(port)} (port ${port})` : undefined;
  if (path && /mysql|mariadb|redis/i.test(path)) return `a service socket (${path})`;
  return undefined;
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  const service = serviceOf(target(args));
  if (service) {
    const { testPath, currentTestName } = expect.getState();
    const where = [testPath ? path.relative(process.cwd(), testPath) : 'a unit test', currentTestName]
      .filter(Boolean)
      .join(' > ');
    const message = `${where}: connected to ${service}; unit tests run without services, move it to test/integration`;
    reached.push(message);
    throw new Error(message);
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

/** The connections refused since the last call, forgotten: for the guard's own test. */
export function takeRefusedConnections(): string[] {
  return reached.splice(0);
}

afterEach(() => {
  if (reached.length === 0) return;
  const messages = reached.splice(0);
  throw new Error(messages.join('\n'));
});
