// The pieces the scenarios share: a namespace per scenario (queue prefix, MySQL database, both removed at
// the end), the scripted model in its own process, real worker processes spawned like the tests spawn them,
// and cheap waits on the queue's own sets (no per-job polling).
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { spawnChild, nextMessage, REPO_ROOT, type Child } from './children.js';
import { deleteKeysWithPrefix } from '../../src/queue/delete-prefix.js';
import { WORKER_NODE_FLAGS } from '../../src/worker/worker-node-flags.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const MYSQL_SERVER = process.env.BENCH_MYSQL_SERVER ?? 'mysql://root@127.0.0.1:3306';

export const log = (message: string): void => {
  const seconds = (performance.now() / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${seconds}s] ${message}\n`);
};

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface Namespace {
  prefix: string;
  /** Null for scenarios without a store. */
  database: string | null;
  mysqlUrl: string;
  /** Deletes the prefix's Redis keys and drops the database. */
  cleanup(): Promise<void>;
}

const open = new Set<Namespace>();
const extraCleanups = new Set<() => Promise<void>>();

/** Cleans every namespace not cleaned yet (for an interrupted run); errors are ignored. */
export async function cleanupAllNamespaces(): Promise<void> {
  await Promise.allSettled([...open].map((ns) => ns.cleanup()));
  await Promise.allSettled([...extraCleanups].map((cleanup) => cleanup()));
}

/** A cleanup an interrupted run must still do; the returned function runs it (once) and unregisters it. */
export function registerCleanup(cleanup: () => Promise<void>): () => Promise<void> {
  const once = async () => {
    if (!extraCleanups.delete(once)) return;
    await cleanup();
  };
  extraCleanups.add(once);
  return once;
}

export function createNamespace(label: string, withDatabase: boolean): Namespace {
  const id = randomBytes(4).toString('hex');
  const prefix = `bench-${label}-${id}`;
  const database = withDatabase ? `af_bench_${label.replace(/\W/g, '_')}_${id}` : null;
  const ns: Namespace = {
    prefix,
    database,
    mysqlUrl: `${MYSQL_SERVER}/${database ?? 'unused'}`,
    async cleanup() {
      open.delete(ns);
      const redis = new Redis(REDIS_URL);
      try {
        await deleteKeysWithPrefix(redis, prefix);
      } finally {
        redis.disconnect();
      }
      if (database) {
        const connection = await mysql.createConnection(MYSQL_SERVER);
        try {
          await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
        } finally {
          await connection.end();
        }
      }
    },
  };
  open.add(ns);
  return ns;
}

/** A call's usage as the scripted server counted it (src/testing/scripted-model-server.ts). */
export interface ServerUsage {
  promptTokens: number;
  completionTokens: number;
  cachedPromptTokens?: number;
  reasoningTokens?: number;
}

export interface ModelServer {
  child: Child;
  baseURL: string;
  /** Request bodies the server recorded, from index `from` on. */
  requests(from?: number): Promise<{
    bodies: Record<string, unknown>[];
    /** The server's own accounting of each call (null for a call it sent no usage for). */
    usages: (ServerUsage | null)[];
    total: number;
    failures: string[];
  }>;
  /** When each request arrived (ms since epoch) and the task it belongs to. */
  timeline(from?: number): Promise<{ task: string; receivedAt: number }[]>;
}

/** `script`: which scripted model (bench/model-server.ts); the steps model by default. */
export async function startModelServer(
  latencyMs: number,
  tool: string,
  script = 'steps',
): Promise<ModelServer> {
  const child = spawnChild(
    `model-server(${latencyMs} ms)`,
    ['--import', 'tsx', 'bench/model-server.ts'],
    { BENCH_MODEL_LATENCY_MS: String(latencyMs), BENCH_TOOL: tool, BENCH_MODEL: script },
    { ipc: true },
  );
  const ready = await nextMessage<{ type: 'ready'; baseURL: string }>(child, 'ready');
  return {
    child,
    baseURL: ready.baseURL,
    async requests(from = 0) {
      const reply = nextMessage<{
        type: 'requests';
        bodies: Record<string, unknown>[];
        usages: (ServerUsage | null)[];
        total: number;
        failures: string[];
      }>(child, 'requests', 60_000);
      child.process.send({ type: 'requests', from });
      return reply;
    },
    async timeline(from = 0) {
      const reply = nextMessage<{ type: 'timeline'; entries: { task: string; receivedAt: number }[] }>(
        child,
        'timeline',
        60_000,
      );
      child.process.send({ type: 'timeline', from });
      return (await reply).entries;
    },
  };
}

export interface AgentWorkerOptions {
  concurrency: number;
  /** Loads bench/heap-probe.ts, writing memory and event-loop samples to this file. */
  probeFile?: string;
  /** With --expose-gc, so the probe can force a full GC before a sample. */
  exposeGc?: boolean;
  /** Extra node flags, e.g. --cpu-prof for an ad-hoc profile (BENCH_WORKER_NODE_ARGS). */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Arguments of the worker entry, e.g. `--processes 2`. */
  args?: string[];
  /** `dist`: the compiled worker (dist/workers/agent-worker.js, `npm run build` first) instead of tsx. */
  entry?: 'tsx' | 'dist';
  /** Another checkout to start the worker from (an A/B of two versions of the code). Default: this one. */
  cwd?: string;
}

/** `node <the worker's V8 flags> --import tsx workers/agent-worker.ts`, as the tests start it, logging at warn. */
export function startAgentWorker(ns: Namespace, model: ModelServer, options: AgentWorkerOptions): Child {
  const probe = pathToFileURL(join(REPO_ROOT, 'bench/heap-probe.ts')).href;
  const args = [
    ...WORKER_NODE_FLAGS,
    ...(options.nodeArgs ?? []),
    ...(options.exposeGc ? ['--expose-gc'] : []),
    ...(options.entry === 'dist' ? [] : ['--import', 'tsx']),
    ...(options.probeFile ? ['--import', probe] : []),
    options.entry === 'dist' ? 'dist/workers/agent-worker.js' : 'workers/agent-worker.ts',
    ...(options.args ?? []),
  ];
  return spawnChild(
    `agent-worker(${ns.prefix})`,
    args,
    {
      REDIS_URL,
      QUEUE_PREFIX: ns.prefix,
      MYSQL_URL: ns.mysqlUrl,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: 'bench-key',
      WORKER_CONCURRENCY: String(options.concurrency),
      AGENT_PROTOCOL: 'json',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      // The watch counts the completed set and reads every job's result: a batch past the default 10,000 kept
      // would be trimmed under it and never seen to finish.
      TASKS_KEEP_COMPLETED_COUNT: '1000000',
      RESULTS_KEEP_COUNT: '1000000',
      ...(options.probeFile ? { BENCH_HEAP_FILE: options.probeFile } : {}),
      ...options.env,
    },
    options.cwd ? { cwd: options.cwd } : {},
  );
}

/** Reads a queue's state from its Redis keys: one command per poll, whatever the number of jobs. */
export class QueueWatch {
  private readonly redis: Redis;
  /** Commands this watch sent so far, by name (to count them out of a server's INFO commandstats). */
  readonly sent: Record<string, number> = {};
  constructor(
    private readonly prefix: string,
    private readonly queue: string,
    redisUrl = REDIS_URL,
  ) {
    this.redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  }

  private key(name: string): string {
    return `${this.prefix}:${this.queue}:${name}`;
  }

  private count(...names: string[]): void {
    for (const name of names) this.sent[name] = (this.sent[name] ?? 0) + 1;
  }

  async counts(): Promise<{ completed: number; failed: number; active: number }> {
    this.count('multi', 'zcard', 'zcard', 'llen', 'exec');
    const [completed, failed, active] = (await this.redis
      .multi()
      .zcard(this.key('completed'))
      .zcard(this.key('failed'))
      .llen(this.key('active'))
      .exec())!.map(([, value]) => Number(value));
    return { completed: completed ?? 0, failed: failed ?? 0, active: active ?? 0 };
  }

  /** The completion time of the job that finished last (the completed set is scored by finishedOn). */
  async lastFinishedOn(): Promise<number> {
    this.count('zrange');
    const [, score] = await this.redis.zrange(this.key('completed'), -1, -1, 'WITHSCORES');
    return Number(score);
  }

  /** processedOn (start of the last attempt) and finishedOn of each job. */
  async timings(jobIds: readonly string[]): Promise<{ processedOn: number; finishedOn: number }[]> {
    const pipeline = this.redis.pipeline();
    for (const id of jobIds) pipeline.hmget(this.key(id), 'processedOn', 'finishedOn');
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([, value]) => {
      const [processedOn, finishedOn] = (value as (string | null)[]) ?? [];
      return { processedOn: Number(processedOn), finishedOn: Number(finishedOn) };
    });
  }

  /** Waits until `target` jobs are completed; throws on a failed job, a dead worker or the time limit. */
  async waitForCompleted(target: number, worker: Child | null, timeoutMs: number): Promise<void> {
    // BENCH_WAIT_SCALE stretches every wait, for a machine too loaded to finish a batch in the usual time.
    const deadline = Date.now() + timeoutMs * Number(process.env.BENCH_WAIT_SCALE ?? 1);
    for (;;) {
      const { completed, failed } = await this.counts();
      if (failed > 0) {
        this.count('zrange', 'hget');
        const [id] = await this.redis.zrange(this.key('failed'), 0, 0);
        const reason = id ? await this.redis.hget(this.key(id), 'failedReason') : null;
        throw new Error(`${failed} job(s) failed on ${this.queue}; first: ${id} ${reason ?? ''}`);
      }
      if (completed >= target) return;
      if (worker && !worker.alive()) {
        throw new Error(`${worker.name} exited (${completed}/${target} done). Output:\n${worker.output()}`);
      }
      if (Date.now() > deadline) {
        const tail = worker ? `\nWorker output:\n${worker.output().slice(-4000)}` : '';
        throw new Error(
          `only ${completed}/${target} jobs completed on ${this.queue} in ${timeoutMs} ms${tail}`,
        );
      }
      await sleep(20);
    }
  }

  close(): void {
    this.redis.disconnect();
  }
}

/** MariaDB's own count of statements received (SHOW GLOBAL STATUS Questions): every client of the server. */
export async function mysqlQuestions(connection: mysql.Connection): Promise<number> {
  const [rows] = await connection.query("SHOW GLOBAL STATUS LIKE 'Questions'");
  return Number((rows as { Value: string }[])[0]?.Value);
}
