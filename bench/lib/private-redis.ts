// A redis-server of the benchmark's own (no persistence, a free port): its INFO commandstats and memory then
// count this scenario's worker alone, whatever other clients of the shared server do meanwhile.
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from '../../src/demo/free-port.js';
import { sleep } from './fleet.js';

export interface PrivateRedis {
  url: string;
  pid: number;
  /** Calls per command since the last CONFIG RESETSTAT (INFO commandstats). */
  commandCalls(): Promise<Record<string, number>>;
  resetStats(): Promise<void>;
  /**
   * Counts every command from now on through MONITOR, by name, apart for those a client sent (a round trip or
   * part of a pipeline) and those a Lua script ran (INFO commandstats counts both alike). Client commands are
   * keyed by the client's address, so the benchmark's own connections can be told apart.
   */
  monitor(): Promise<CommandMonitor>;
  /** INFO memory's used_memory, bytes. */
  usedMemory(): Promise<number>;
  close(): Promise<void>;
}

export interface CommandMonitor {
  /** source address (`127.0.0.1:port`) → command → calls. */
  readonly byClient: Map<string, Record<string, number>>;
  readonly inScripts: Record<string, number>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort(0);
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', [...args, '--daemonize', 'no', '--logfile', ''], { stdio: 'ignore' });
  const failed = new Promise<never>((_, reject) =>
    child.once('error', (error) => reject(new Error(`redis-server could not start: ${error.message}`))),
  );
  // Killed with the benchmark, however it ends.
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  const url = `redis://127.0.0.1:${port}`;
  const up = (async () => {
    for (let i = 0; i < 100; i++) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') return;
      } catch {
        await sleep(50);
      } finally {
        probe.disconnect();
      }
    }
    throw new Error(`redis-server on port ${port} did not answer`);
  })();
  await Promise.race([up, failed]);
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  return {
    url,
    pid: child.pid!,
    async commandCalls() {
      const text = await admin.info('commandstats');
      const calls: Record<string, number> = {};
      for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
        calls[match[1]!] = Number(match[2]);
      return calls;
    },
    async resetStats() {
      await admin.config('RESETSTAT');
    },
    async monitor() {
      const connection = new Redis(url, { maxRetriesPerRequest: 1 });
      connection.on('error', () => undefined);
      const feed = await connection.monitor();
      const byClient = new Map<string, Record<string, number>>();
      const inScripts: Record<string, number> = {};
      feed.on('monitor', (_time: string, args: string[], source: string) => {
        let name = String(args[0] ?? '').toLowerCase();
        // A script is told apart by its first key, with the ids taken out: `evalsha <prefix>:agent-tasks:<id>`.
        if ((name === 'evalsha' || name === 'eval') && Number(args[2]) > 0)
          name = `${name} ${String(args[3])
            .replace(/^[^:]*/, '<prefix>')
            .replace(/[0-9a-f-]{8,}|\b\d+\b/g, '<id>')}`;
        const counts = source === 'lua' ? inScripts : (byClient.get(source) ?? {});
        counts[name] = (counts[name] ?? 0) + 1;
        if (source !== 'lua') byClient.set(source, counts);
      });
      return {
        byClient,
        inScripts,
        async stop() {
          feed.disconnect();
          connection.disconnect();
        },
      };
    },
    async usedMemory() {
      const text = await admin.info('memory');
      return Number(/^used_memory:(\d+)/m.exec(text)?.[1]);
    },
    async close() {
      admin.disconnect();
      kill();
    },
  };
}
