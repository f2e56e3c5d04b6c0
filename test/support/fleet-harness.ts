// Integration set-up for the fleet: a fresh queue prefix and MySQL database per test file, a scripted model
// over HTTP, and real worker processes (`npm run worker`'s entry) started and stopped like in production.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { FleetClient } from '../../src/client/fleet-client.js';
import { deleteKeysWithPrefix } from '../../src/queue/delete-prefix.js';
import { WORKER_NODE_FLAGS } from '../../src/worker/worker-node-flags.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * The model the fleet tests' workers run unless a test names one: the seed's. Their budgets, caps and cost figures
 * were set at its prices ($10 / $30 per million tokens, e.g. "each task costs about a cent"), and its requests are
 * the plain Chat Completions shape the scripted rules expect. `LLM_MODEL: ''` runs the fleet's default
 * (gpt-5.4-mini), as test/integration/demo/reference-task.test.ts does.
 */
export const FLEET_TEST_MODEL = 'gpt-4-turbo-preview';
const MYSQL_SERVER = 'mysql://root@127.0.0.1:3306';

export interface FleetNamespace {
  prefix: string;
  database: string;
  mysqlUrl: string;
  client: FleetClient;
  /** Deletes the Redis keys and the database. */
  cleanup(): Promise<void>;
}

export function createNamespace(label: string): FleetNamespace {
  const id = randomBytes(4).toString('hex');
  const prefix = `test-${label}-${id}`;
  const database = `af_test_${label.replace(/\W/g, '_')}_${id}`;
  const client = new FleetClient({ redisUrl: REDIS_URL, prefix });
  return {
    prefix,
    database,
    mysqlUrl: `${MYSQL_SERVER}/${database}`,
    client,
    async cleanup() {
      await client.close();
      const redis = new Redis(REDIS_URL);
      try {
        await deleteKeysWithPrefix(redis, prefix);
      } finally {
        redis.disconnect();
      }
      const connection = await mysql.createConnection(MYSQL_SERVER);
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await connection.end();
    },
  };
}

export interface WorkerHandle {
  child: ChildProcessWithoutNullStreams;
  /** Started in a process group of its own (killWorker then kills the whole group). */
  group: boolean;
  output(): string;
  /** Resolves with the exit code (or the signal) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

export interface StartOptions {
  /** The command line; default the worker under node, as the Dockerfile runs it. */
  command?: readonly string[];
  /** A process group of its own, so a test can signal the group the way a terminal does. */
  detached?: boolean;
}

export function startWorker(
  ns: FleetNamespace,
  env: Record<string, string>,
  options: StartOptions = {},
): WorkerHandle {
  const [file, ...args] = options.command ?? [
    process.execPath,
    ...WORKER_NODE_FLAGS,
    '--import',
    'tsx',
    'workers/agent-worker.ts',
  ];
  const child = spawn(file!, args, {
    detached: options.detached ?? false,
    env: {
      ...process.env,
      REDIS_URL,
      QUEUE_PREFIX: ns.prefix,
      MYSQL_URL: ns.mysqlUrl,
      OPENAI_API_KEY: 'test-key',
      LLM_MODEL: FLEET_TEST_MODEL,
      // No metrics server unless a test asks for one: test workers of every file (and every engineer on a
      // shared host) would otherwise compete for the METRICS_PORT span, and a worker without a port exits.
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      ...env,
    },
    stdio: 'pipe',
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    group: options.detached ?? false,
    output: () => output,
    exited,
    waitForOutput(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(output)) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`worker did not print ${pattern} within ${timeoutMs} ms. Output:\n${output}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

/** Stops a worker for good at the end of a test, whatever state it is in. */
export async function killWorker(worker: WorkerHandle): Promise<void> {
  if (worker.group && worker.child.pid !== undefined) {
    try {
      process.kill(-worker.child.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
  if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  await worker.exited;
}

export async function queryStore<T>(ns: FleetNamespace, sql: string, params: unknown[] = []): Promise<T[]> {
  const connection = await mysql.createConnection(ns.mysqlUrl);
  try {
    const [rows] = await connection.query(sql, params);
    return rows as T[];
  } finally {
    await connection.end();
  }
}
