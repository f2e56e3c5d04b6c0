// A redis-server of the test's own, with append-only persistence, that the test can kill and start again on
// the same port and directory: a Redis restart as in production, without touching the shared server.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../src/demo/free-port.js';

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILL: no shutdown save, only what the append-only file already holds survives. */
  kill(): Promise<void>;
  /** Starts again on the same port and directory, and waits until it answers PING. */
  start(): Promise<void>;
  /** Kills it for good and deletes its directory. */
  close(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'af-redis-'));
  const port = await freePort(0);
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''];
    args.push('--appendonly', 'yes', '--appendfsync', 'always', '--daemonize', 'no', '--logfile', '');
    // redis-server missing makes spawn emit 'error': the scenario must fail then, not skip.
    const process_ = spawn('redis-server', args, { stdio: 'ignore' });
    child = process_;
    exited = new Promise((resolve) => process_.once('exit', () => resolve()));
    const failed = new Promise<never>((_, reject) =>
      process_.once('error', (error) => reject(new Error(`redis-server could not start: ${error.message}`))),
    );
    await Promise.race([waitForPing(port), failed]);
  };
  const kill = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    start,
    async close() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPing(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      // While it loads the append-only file, Redis answers LOADING: not up yet.
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      if (Date.now() > deadline)
        throw new Error(`redis-server on port ${port} did not answer PING in ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      probe.disconnect();
    }
  }
}
