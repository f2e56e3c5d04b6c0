// redis-server processes of a test's own (a cluster's nodes, Sentinel's master, replica and sentinels): each
// started on a free port and awaited until it answers PING, all killed together at the end. A missing
// redis-server fails the test: such a test is never skipped.
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis, type RedisOptions } from 'ioredis';

/** How a test's own servers are reached: a password (`requirepass`), and TLS trusting this CA's PEM text. */
export interface ServerAccess {
  password?: string | undefined;
  tlsCa?: string | undefined;
}

export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A plain connection that keeps trying (the server may be starting) and never reports its errors. */
export function connect(port: number, access: ServerAccess = {}): Redis {
  const options: RedisOptions = {
    port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 1,
    retryStrategy: () => 100,
  };
  if (access.password !== undefined) options.password = access.password;
  if (access.tlsCa !== undefined) options.tls = { ca: access.tlsCa };
  const redis = new Redis(options);
  redis.on('error', () => undefined);
  return redis;
}

export class RedisProcesses {
  private readonly children: ChildProcess[] = [];

  /** Starts `redis-server args` and waits until the server on `port` answers PING. */
  async start(port: number, args: string[], access: ServerAccess = {}): Promise<ChildProcess> {
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.children.push(child);
    const failed = new Promise<never>((_, reject) =>
      child.once('error', (error) => reject(new Error(`redis-server could not start: ${error.message}`))),
    );
    const probe = connect(port, access);
    try {
      await Promise.race([
        waitFor(async () => (await probe.ping()) === 'PONG', `redis-server :${port}`),
        failed,
      ]);
    } finally {
      probe.disconnect();
    }
    return child;
  }

  /** SIGKILL to every process started, waiting for each to exit. */
  async killAll(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
  }
}
