// Scenario 7: the worker with the real tools. The reference task's shape (list_tables, a query the database
// refuses, the corrected query, three emails in parallel, the answer: 5 model calls) through ONE worker
// process (native tool calls) with the SQL tools on a private copy of the demo data database (its own read-only
// account), send_email to the demo SMTP sink, traces in MySQL and a Redis server of its own (so INFO
// commandstats counts this worker alone). Each measured batch is followed by the baseline: a bare loop on the
// `openai` package in a process of its own (bench/real-tools-floor.ts) making the very calls that batch made
// (the recorded bodies) and the tool calls their replies ask for, through mysql2 and nodemailer: twice, by two
// loops in the same run, one sending mail with nodemailer's default (one SMTP connection per message), one with
// `pool: true` (kept connections, as a plain script sending mail in a loop makes it), their order alternated.
// CPU of all from /proc/<pid>/stat (utime + stime, all threads). The ratio is per pair, the median judged.
// Then the cold, whole-life measure: a fresh worker process (logging at its default level, info, as a user runs
// it) and a fresh pooled loop process each doing `coldTasks` tasks, CPU over each process's whole life (spawn to
// exit, from this process's reaped children's times), split into start-up (spawn to ready) and the rest. Both
// start with tsx, or (BENCH_REAL_COLD_ENTRY=dist) both compiled: the worker from dist/, the loop transpiled.
// With `profile`, a last batch runs on a worker under --cpu-prof, and the profile's samples of that batch's
// window are split by component (bench/lib/cpu-profile.ts).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import ts from 'typescript';
import { FleetClient } from '../../src/client/fleet-client.js';
import { seedDemoDatabase } from '../../src/demo/seed-demo-database.js';
import { startSmtpSink, type SmtpSink } from '../../src/demo/smtp-sink.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import { nextMessage, REPO_ROOT, spawnChild, type Child } from '../lib/children.js';
import { summarizeProfile, type ProfileSummary } from '../lib/cpu-profile.js';
import { PERF_HZ, PerfRecording, summarizePerf, type PerfSummary } from '../lib/perf-profile.js';
import {
  createNamespace,
  log,
  MYSQL_SERVER,
  QueueWatch,
  registerCleanup,
  sleep,
  startAgentWorker,
  mysqlQuestions,
  startModelServer,
  type ModelServer,
  type Namespace,
} from '../lib/fleet.js';
import { startPrivateRedis, type CommandMonitor, type PrivateRedis } from '../lib/private-redis.js';
import {
  cpuMsOf,
  cpuMsOfAll,
  mainThreadCpuMsOf,
  pidsByComm,
  reapedChildrenCpuMs,
  syscallsOf,
} from '../lib/proc.js';
import { jobsOf, type Body } from '../lib/replay.js';
import { realToolsTask, REAL_TOOLS_MODEL } from '../lib/real-tools-model.js';
import { median, spread } from '../lib/stats.js';

export interface RealToolsOptions {
  tasks: number;
  warmupTasks: number;
  concurrency: number;
  repetitions: number;
  profile: boolean;
  workerNodeArgs: string[];
  /** Tasks of each cold, whole-life pair (0: none), and how many pairs. */
  coldTasks: number;
  coldRepetitions: number;
  /** The cold worker's log level (default the worker's own: info) and entry (tsx or the compiled dist/). */
  coldLogLevel: string;
  coldEntry: 'tsx' | 'dist';
  /** The warm pairs under `perf record`: the worker and the pooled loop on-CPU, every thread (BENCH_PERF=1). */
  perf?: boolean;
}

export interface RealToolsBatch {
  tasks: number;
  modelCalls: number;
  elapsedMs: number;
  workerCpuMsPerCall: number;
  workerCpuMsPerRun: number;
  workerWritesPerCall: number;
  /** Bytes those writes carried (wchar of /proc/<pid>/io), and the reads' count and bytes, per model call. */
  workerBytesWrittenPerCall: number;
  workerReadsPerCall: number;
  workerBytesReadPerCall: number;
  /**
   * From the scenario's own Redis server (MONITOR): commands the worker sent (round trips or pipelined), per
   * model call, and by name; and the commands its Lua scripts ran (the producer's adds' scripts counted out).
   */
  redisCommandsPerCall: number;
  redisCommands: Record<string, number>;
  redisScriptCommandsPerCall: number;
  redisScriptCommands: Record<string, number>;
  /** INFO commandstats: every command Redis executed in the window (scripts' included), per model call. */
  redisExecutedPerCall: number;
  /** SHOW GLOBAL STATUS Questions: the shared MariaDB, so other clients meanwhile count too. */
  mysqlQueriesPerCall: number;
  mysqlCpuMsPerCall: number | null;
  emails: number;
  floor: {
    calls: number;
    toolCalls: number;
    elapsedMs: number;
    /** /proc/<pid>/stat of the loop's process around the replay. */
    cpuMsPerCall: number;
    /** process.cpuUsage() inside it: the same window from inside. */
    selfCpuMsPerCall: number;
    /** Write system calls (syscw of /proc/<pid>/io) per model call: each socket write is one. */
    writesPerCall: number;
    bytesWrittenPerCall: number;
    readsPerCall: number;
    bytesReadPerCall: number;
    errors: number;
  };
  /** The same replay by the loop with pooled SMTP (nodemailer `pool: true`). */
  pooledFloor: RealToolsBatch['floor'];
  ratio: number;
  pooledRatio: number;
  unexpected: Record<string, number>;
}

/** One process's whole life in the cold measure. */
export interface ColdLife {
  calls: number;
  /** Spawn to ready (the worker's "worker started" line; the loop's `ready` message). */
  startCpuMs: number;
  /** Ready to the last task's end. */
  runCpuMs: number;
  /** Spawn to exit (shutdown included), exact. */
  wholeCpuMs: number;
  /** Spawn to the last task's end, of the main thread alone (V8's GC helpers, libuv's pool and others out). */
  mainThreadCpuMs: number;
  startWallMs: number;
}

export interface ColdPair {
  tasks: number;
  worker: ColdLife;
  floor: ColdLife;
  /** Whole-life CPU per model call, worker over loop. */
  ratio: number;
  /** The same without start-up (ready to exit). */
  afterStartRatio: number;
  unexpected: Record<string, number>;
}

export interface RealToolsResult {
  concurrency: number;
  tasksPerBatch: number;
  workerCpuMsPerCall: number;
  workerCpuMsPerRun: number;
  floorCpuMsPerCall: number;
  pooledFloorCpuMsPerCall: number;
  /** Median of the per-pair ratios. */
  ratio: number;
  pairRatios: number[];
  pooledRatio: number;
  pooledPairRatios: number[];
  cold?: {
    tasks: number;
    logLevel: string;
    entry: 'tsx' | 'dist';
    workerCpuMsPerCall: number;
    floorCpuMsPerCall: number;
    ratio: number;
    workerStartCpuMs: number;
    floorStartCpuMs: number;
    workerAfterStartCpuMsPerCall: number;
    floorAfterStartCpuMsPerCall: number;
    afterStartRatio: number;
    /** Whole life of the main threads alone (spawn to the last task's end): what a per-thread counter sees. */
    mainThreadRatio: number;
    pairs: ColdPair[];
  };
  cpuSpread: number;
  redisCommandsPerCall: number;
  /** Write system calls per model call (each socket write is one): the worker's, the pooled loop's. */
  workerWritesPerCall: number;
  pooledFloorWritesPerCall: number;
  /** Bytes written and read per model call (all sockets and files): the worker's, the pooled loop's. */
  workerBytesWrittenPerCall: number;
  pooledFloorBytesWrittenPerCall: number;
  workerBytesReadPerCall: number;
  pooledFloorBytesReadPerCall: number;
  redisScriptCommandsPerCall: number;
  mysqlQueriesPerCall: number;
  batches: RealToolsBatch[];
  /** An example answer of each kind of run that did not take the planned 5 steps. */
  unexpectedSamples: Record<string, string>;
  profile?: {
    tasks: number;
    modelCalls: number;
    cpuMsPerCall: number;
    summary: ProfileSummary;
    threads: ProfileSummary[];
    /** The pooled loop under --cpu-prof replaying the same calls (after one warm-up replay of them). */
    floor?: { cpuMsPerCall: number; summary: ProfileSummary };
  };
  /** The warm pairs on-CPU (perf-profile.ts): the worker's and the pooled loop's, over the same model calls. */
  perf?: { hz: number; modelCalls: number; worker: PerfSummary; pooledLoop: PerfSummary };
}

const REAL_TOOLS_STEPS = 5;

/** A private copy of the demo data database and its read-only account, removed at the end. */
export async function seedPrivateData(label: string): Promise<{ url: string; cleanup: () => Promise<void> }> {
  const id = randomBytes(4).toString('hex');
  const database = `af_bench_${label}_data_${id}`;
  const user = `afb_${label}_${id}`;
  const password = randomBytes(9).toString('hex');
  const cleanup = registerCleanup(async () => {
    const connection = await mysql.createConnection(MYSQL_SERVER);
    try {
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await connection.query(`DROP USER IF EXISTS '${user}'@'%'`);
    } finally {
      await connection.end();
    }
  });
  await seedDemoDatabase({ adminUrl: MYSQL_SERVER, database, readerUser: user, readerPassword: password });
  return { url: `mysql://${user}:${password}@127.0.0.1:3306/${database}`, cleanup };
}

/**
 * The loop compiled to plain JavaScript (dist/bench/real-tools-floor.js, next to the compiled worker), for the
 * cold pairs from dist/: a plain script started with `node`, no loader. Its imports resolve from the repository.
 */
function compiledFloor(): string {
  const out = join(REPO_ROOT, 'dist/bench/real-tools-floor.js');
  const source = readFileSync(join(REPO_ROOT, 'bench/real-tools-floor.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  mkdirSync(join(REPO_ROOT, 'dist/bench'), { recursive: true });
  writeFileSync(out, outputText);
  return out;
}

class Floor {
  private constructor(
    readonly child: Child,
    private readonly model: ModelServer,
  ) {}

  /** CPU of the loop's process from spawn to its `ready` message, and the wall time. */
  startCpuMs = 0;
  startWallMs = 0;

  static async start(
    dataUrl: string,
    smtpUrl: string,
    pooled: boolean,
    nodeArgs: string[] = [],
    entry: 'tsx' | 'dist' = 'tsx',
  ): Promise<Floor> {
    const model = await startModelServer(0, 'none', REAL_TOOLS_MODEL);
    const script = entry === 'dist' ? [compiledFloor()] : ['--import', 'tsx', 'bench/real-tools-floor.ts'];
    const t0 = performance.now();
    const child = spawnChild(
      pooled ? 'real-tools-floor(pooled)' : 'real-tools-floor',
      [...nodeArgs, ...script],
      {
        BENCH_MODEL_URL: model.baseURL,
        BENCH_DATA_URL: dataUrl,
        BENCH_SMTP_URL: smtpUrl,
        BENCH_SMTP_POOL: pooled ? '1' : '0',
        NODE_ENV: 'production',
      },
      { ipc: true },
    );
    let startCpuMs: number;
    try {
      await nextMessage(child, 'ready');
      startCpuMs = cpuMsOf(child.pid);
    } catch (error) {
      await child.stop();
      await model.child.stop();
      throw error;
    }
    const floor = new Floor(child, model);
    floor.startCpuMs = startCpuMs;
    floor.startWallMs = performance.now() - t0;
    return floor;
  }

  async replay(jobs: Body[][], concurrency: number): Promise<RealToolsBatch['floor']> {
    const loaded = nextMessage(this.child, 'loaded', 60_000);
    this.child.process.send({ type: 'load', jobs });
    await loaded;
    const done = nextMessage<{
      type: 'replayed';
      elapsedMs: number;
      cpuMs: number;
      calls: number;
      toolCalls: number;
      errors: number;
    }>(this.child, 'replayed', 180_000);
    const cpu0 = cpuMsOf(this.child.pid);
    const io0 = syscallsOf(this.child.pid);
    this.child.process.send({ type: 'replay', concurrency });
    const r = await done;
    const cpu1 = cpuMsOf(this.child.pid);
    const io1 = syscallsOf(this.child.pid);
    return {
      calls: r.calls,
      toolCalls: r.toolCalls,
      elapsedMs: r.elapsedMs,
      cpuMsPerCall: (cpu1 - cpu0) / r.calls,
      selfCpuMsPerCall: r.cpuMs / r.calls,
      // The 'replayed' message to us is one of them.
      writesPerCall: (io1.writes - io0.writes - 1) / r.calls,
      bytesWrittenPerCall: (io1.writtenBytes - io0.writtenBytes) / r.calls,
      readsPerCall: (io1.reads - io0.reads) / r.calls,
      bytesReadPerCall: (io1.readBytes - io0.readBytes) / r.calls,
      errors: r.errors,
    };
  }

  /** Stops the loop; its whole life's CPU (spawn to exit), exact: nothing else of ours exits meanwhile. */
  async close(): Promise<number> {
    const reaped0 = reapedChildrenCpuMs();
    this.child.process.disconnect(); // the loop closes its pool and transport and exits
    await Promise.race([this.child.exited, sleep(10_000)]);
    await this.child.stop();
    const wholeCpuMs = reapedChildrenCpuMs() - reaped0;
    await this.model.child.stop();
    return wholeCpuMs;
  }
}

export interface Rig {
  ns: Namespace;
  redis: PrivateRedis;
  client: FleetClient;
  watch: QueueWatch;
  model: ModelServer;
  sink: SmtpSink;
  dataUrl: string;
  completed: number;
  label: number;
  monitor: CommandMonitor;
  /** Addresses of the benchmark's own Redis connections. */
  benchClients: Set<string>;
}

export type Counts = Record<string, number>;
export const add = (into: Counts, from: Counts, factor = 1) => {
  for (const [name, n] of Object.entries(from)) into[name] = (into[name] ?? 0) + n * factor;
  return into;
};
const total = (counts: Counts) => Object.values(counts).reduce((a, b) => a + b, 0);
const rounded = (counts: Counts) =>
  Object.fromEntries(
    Object.entries(counts)
      .map(([name, n]) => [name, Math.round(n)] as const)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]),
  );

/** The worker's commands (every client but the benchmark's) and the scripts' since `since`. */
function snapshot(rig: Rig): { worker: Counts; scripts: Counts } {
  const worker: Counts = {};
  for (const [source, counts] of rig.monitor.byClient) if (!rig.benchClients.has(source)) add(worker, counts);
  return { worker, scripts: { ...rig.monitor.inScripts } };
}

export function startWorker(
  rig: Rig,
  concurrency: number,
  nodeArgs: string[],
  options: { cold?: { logLevel: string; entry: 'tsx' | 'dist' }; cwd?: string } = {},
): Child {
  const { cold, cwd } = options;
  return startAgentWorker(rig.ns, rig.model, {
    concurrency,
    nodeArgs,
    ...(cold ? { entry: cold.entry } : {}),
    ...(cwd ? { cwd } : {}),
    env: {
      ...(cold ? { LOG_LEVEL: cold.logLevel } : {}),
      REDIS_URL: rig.redis.url,
      DATA_MYSQL_URL: rig.dataUrl,
      SMTP_URL: rig.sink.url,
      AGENT_PROTOCOL: 'tools',
      // The whole conversation stays verbatim: 5 model calls a run, no summary call.
      AGENT_MEMORY_WINDOW: '20',
    },
  });
}

async function enqueue(rig: Rig, count: number): Promise<string[]> {
  const label = `r${++rig.label}`;
  const tasks = Array.from({ length: count }, (_, i) => ({
    task: realToolsTask(`${label}-${i}`),
    budget: { maxSteps: 8, maxTokens: 200_000, maxCostUsd: 5 },
  }));
  return (await rig.client.enqueueMany(tasks)).map((job) => job.jobId);
}

/** What the first run of each unexpected kind answered. */
export const samples = new Map<string, string>();

export async function check(rig: Rig, jobIds: readonly string[]): Promise<Record<string, number>> {
  const unexpected: Record<string, number> = {};
  for (let i = 0; i < jobIds.length; i += 50) {
    const results = await Promise.all(jobIds.slice(i, i + 50).map((id) => rig.client.getResult(id)));
    for (const result of results) {
      const key = !result
        ? 'no result'
        : result.status !== 'succeeded' || result.steps !== REAL_TOOLS_STEPS
          ? `${result.status}/${result.stopReason}/${result.steps} steps`
          : undefined;
      if (key) {
        unexpected[key] = (unexpected[key] ?? 0) + 1;
        // One example of what such a run answered (a query the guard refused under load, for instance).
        if (!samples.has(key))
          samples.set(key, String(result?.answer ?? result?.error?.message ?? '').slice(0, 300));
      }
    }
  }
  return unexpected;
}

/** Runs `tasks` tasks on the worker and waits for them, reading the counters around them. */
export async function workerBatch(rig: Rig, worker: Child, tasks: number) {
  const before = (await rig.model.requests(Number.MAX_SAFE_INTEGER)).total;
  const mysqlPids = pidsByComm(['mariadbd', 'mysqld']);
  const admin = await mysql.createConnection(MYSQL_SERVER);
  try {
    const emails0 = rig.sink.messages.length;
    await rig.redis.resetStats();
    const seen0 = snapshot(rig);
    const questions0 = await mysqlQuestions(admin);
    const mysqlCpu0 = cpuMsOfAll(mysqlPids);
    const cpu0 = cpuMsOf(worker.pid);
    const io0 = syscallsOf(worker.pid);
    const hr0 = process.hrtime.bigint();
    const t0 = Date.now();
    const jobIds = await enqueue(rig, tasks);
    rig.completed += tasks;
    await rig.watch.waitForCompleted(rig.completed, worker, 300_000);
    const t1 = await rig.watch.lastFinishedOn();
    const hr1 = process.hrtime.bigint();
    const cpu1 = cpuMsOf(worker.pid);
    const io1 = syscallsOf(worker.pid);
    const mysqlCpu1 = cpuMsOfAll(mysqlPids);
    const questions1 = await mysqlQuestions(admin);
    const executed = total(await rig.redis.commandCalls());
    await sleep(100); // MONITOR's feed catches up
    const seen1 = snapshot(rig);
    // The reads of the counters themselves: INFO (1) and CONFIG RESETSTAT are the benchmark's; so are the
    // QueueWatch polls (MULTI, 2 × ZCARD, LLEN, EXEC every 20 ms and one ZRANGE) and the client's adds.
    const recorded = await rig.model.requests(before);
    if (recorded.failures.length > 0) throw new Error(`scripted model failures: ${recorded.failures[0]}`);
    return {
      jobIds,
      bodies: recorded.bodies,
      elapsedMs: t1 - t0,
      cpuMs: cpu1 - cpu0,
      writes: io1.writes - io0.writes,
      writtenBytes: io1.writtenBytes - io0.writtenBytes,
      reads: io1.reads - io0.reads,
      readBytes: io1.readBytes - io0.readBytes,
      hrWindowUs: [Number(hr0 / 1000n), Number(hr1 / 1000n)] as const,
      commands: add({ ...seen1.worker }, seen0.worker, -1),
      scripts: add({ ...seen1.scripts }, seen0.scripts, -1),
      executed,
      questions: questions1 - questions0 - 1,
      mysqlCpuMs: mysqlPids.length ? mysqlCpu1 - mysqlCpu0 : null,
      emails: rig.sink.messages.length - emails0,
    };
  } finally {
    await admin.end();
  }
}

/**
 * A fresh worker process does `coldTasks` tasks from its start, then a fresh pooled loop process makes the
 * calls those tasks made (replayed as in the warm pairs); each is stopped once done. CPU over each process's
 * whole life, as a measure from outside a process sees it: start-up, a cold JIT and shutdown included.
 */
async function coldPair(
  rig: Rig,
  options: RealToolsOptions,
  cold: { logLevel: string; entry: 'tsx' | 'dist' },
): Promise<ColdPair> {
  const t0 = performance.now();
  const worker = startWorker(rig, options.concurrency, options.workerNodeArgs, { cold });
  let life: Omit<ColdLife, 'wholeCpuMs'>;
  let bodies: Body[];
  let unexpected: Record<string, number>;
  try {
    // "worker started" is logged at info; at a quieter level the worker is taken as ready once it logs nothing
    // more and its CPU stops moving.
    let last = -1;
    for (;;) {
      if (!worker.alive()) throw new Error(`the cold worker exited:\n${worker.output()}`);
      if (performance.now() - t0 > 120_000)
        throw new Error(`the cold worker did not start:\n${worker.output()}`);
      if (/worker started/.test(worker.output())) break;
      const now = cpuMsOf(worker.pid);
      if (cold.logLevel !== 'info' && cold.logLevel !== 'debug' && now === last && now > 0) break;
      last = now;
      await sleep(cold.logLevel === 'info' || cold.logLevel === 'debug' ? 5 : 300);
    }
    const startCpuMs = cpuMsOf(worker.pid);
    const startWallMs = performance.now() - t0;
    const w = await workerBatch(rig, worker, options.coldTasks);
    unexpected = await check(rig, w.jobIds);
    bodies = w.bodies;
    life = {
      calls: w.bodies.length,
      startCpuMs,
      runCpuMs: cpuMsOf(worker.pid) - startCpuMs,
      startWallMs,
      mainThreadCpuMs: mainThreadCpuMsOf(worker.pid),
    };
  } catch (error) {
    await worker.stop(10_000);
    throw error;
  }
  const reaped0 = reapedChildrenCpuMs();
  await worker.stop(20_000);
  const workerLife: ColdLife = { ...life, wholeCpuMs: reapedChildrenCpuMs() - reaped0 };

  const floor = await Floor.start(rig.dataUrl, rig.sink.url, true, [], cold.entry);
  let floorLife: Omit<ColdLife, 'wholeCpuMs'>;
  try {
    const ready = cpuMsOf(floor.child.pid);
    const f = await floor.replay(jobsOf(bodies), options.concurrency);
    floorLife = {
      calls: f.calls,
      startCpuMs: floor.startCpuMs,
      runCpuMs: cpuMsOf(floor.child.pid) - ready,
      startWallMs: floor.startWallMs,
      mainThreadCpuMs: mainThreadCpuMsOf(floor.child.pid),
    };
  } catch (error) {
    await floor.close();
    throw error;
  }
  const floorLifeAll: ColdLife = { ...floorLife, wholeCpuMs: await floor.close() };
  const perCall = (l: ColdLife, whole: number) => whole / l.calls;
  return {
    tasks: options.coldTasks,
    worker: workerLife,
    floor: floorLifeAll,
    ratio: perCall(workerLife, workerLife.wholeCpuMs) / perCall(floorLifeAll, floorLifeAll.wholeCpuMs),
    afterStartRatio:
      perCall(workerLife, workerLife.wholeCpuMs - workerLife.startCpuMs) /
      perCall(floorLifeAll, floorLifeAll.wholeCpuMs - floorLifeAll.startCpuMs),
    unexpected,
  };
}

/** Scenario 7's rig (its Redis, data database, SMTP sink and model server), with the benchmark's own traffic measured. */
export interface OpenRig {
  rig: Rig;
  /** What the adds' scripts run per task, counted out of each batch's Redis commands. */
  addScriptsPerTask: Counts;
  close: () => Promise<void>;
}

export async function openRig(): Promise<OpenRig> {
  const ns = createNamespace('real', true);
  const redis = await startPrivateRedis();
  const sink = await startSmtpSink();
  const data = await seedPrivateData('real');
  const client = new FleetClient({ redisUrl: redis.url, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, TASKS_QUEUE, redis.url);
  const model = await startModelServer(0, 'none', REAL_TOOLS_MODEL);
  const monitor = await redis.monitor();
  const rig: Rig = {
    ...{ ns, redis, client, watch, model, sink, dataUrl: data.url, completed: 0, label: 0 },
    monitor,
    benchClients: new Set(),
  };
  const close = async () => {
    await model.child.stop();
    await client.close();
    watch.close();
    await sink.close();
    await monitor.stop();
    await redis.close();
    await data.cleanup();
    await ns.cleanup();
  };
  try {
    // Before any worker runs: the benchmark's own connections (its client's adds, its watch), and what the adds'
    // scripts run per task, counted out of each batch.
    const calibration = 20;
    await enqueue(rig, calibration);
    await watch.counts();
    await redis.usedMemory();
    await sleep(200);
    rig.benchClients = new Set(rig.monitor.byClient.keys());
    const addScriptsPerTask = add({}, rig.monitor.inScripts, 1 / calibration);
    rig.completed += calibration;
    return { rig, addScriptsPerTask, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export async function realTools(options: RealToolsOptions): Promise<RealToolsResult> {
  const { rig, addScriptsPerTask, close } = await openRig();
  const { sink, dataUrl } = rig;
  let worker: Child | undefined;
  let floor: Floor | undefined;
  let pooledFloor: Floor | undefined;
  const profileDir = mkdtempSync(join(tmpdir(), 'af-bench-prof-'));
  try {
    // JavaScript frames named for perf (node writes /tmp/perf-<pid>.map), for the two processes it records.
    const perfArgs = options.perf ? ['--perf-basic-prof'] : [];
    worker = startWorker(rig, options.concurrency, [...options.workerNodeArgs, ...perfArgs]);
    floor = await Floor.start(dataUrl, sink.url, false);
    pooledFloor = await Floor.start(dataUrl, sink.url, true, perfArgs);
    log(`real tools: warm-up ${options.warmupTasks} tasks`);
    const warm = await workerBatch(rig, worker, options.warmupTasks);
    const warmUnexpected = await check(rig, warm.jobIds);
    if (Object.keys(warmUnexpected).length > 0)
      log(
        `real tools: unexpected results in the warm-up: ${JSON.stringify(warmUnexpected)} ${JSON.stringify([...samples])}`,
      );
    await floor.replay(jobsOf(warm.bodies), options.concurrency);
    await pooledFloor.replay(jobsOf(warm.bodies), options.concurrency);
    const batches: RealToolsBatch[] = [];
    const perfFile = join(profileDir, 'perf.data');
    const recording = options.perf
      ? PerfRecording.start([worker.pid, pooledFloor.child.pid], perfFile)
      : undefined;
    for (let rep = 0; rep < options.repetitions; rep++) {
      log(`real tools: pair ${rep + 1}, ${options.tasks} tasks on the worker, then the two bare loops`);
      const w = await workerBatch(rig, worker, options.tasks);
      const unexpected = await check(rig, w.jobIds);
      const jobs = jobsOf(w.bodies);
      const [f, pf] =
        rep % 2 === 0
          ? [
              await floor.replay(jobs, options.concurrency),
              await pooledFloor.replay(jobs, options.concurrency),
            ]
          : await (async () => {
              const pooledFirst = await pooledFloor!.replay(jobs, options.concurrency);
              return [await floor!.replay(jobs, options.concurrency), pooledFirst] as const;
            })();
      const calls = w.bodies.length;
      const scripts = add({ ...w.scripts }, addScriptsPerTask, -options.tasks);
      batches.push({
        tasks: options.tasks,
        modelCalls: calls,
        elapsedMs: w.elapsedMs,
        workerCpuMsPerCall: w.cpuMs / calls,
        workerCpuMsPerRun: w.cpuMs / options.tasks,
        workerWritesPerCall: w.writes / calls,
        workerBytesWrittenPerCall: w.writtenBytes / calls,
        workerReadsPerCall: w.reads / calls,
        workerBytesReadPerCall: w.readBytes / calls,
        redisCommandsPerCall: total(w.commands) / calls,
        redisCommands: rounded(w.commands),
        redisScriptCommandsPerCall: total(scripts) / calls,
        redisScriptCommands: rounded(scripts),
        redisExecutedPerCall: w.executed / calls,
        mysqlQueriesPerCall: w.questions / calls,
        mysqlCpuMsPerCall: w.mysqlCpuMs === null ? null : w.mysqlCpuMs / calls,
        emails: w.emails,
        floor: f,
        pooledFloor: pf,
        ratio: w.cpuMs / calls / f.cpuMsPerCall,
        pooledRatio: w.cpuMs / calls / pf.cpuMsPerCall,
        unexpected,
      });
    }
    let perf: RealToolsResult['perf'];
    if (recording) {
      await recording.stop();
      log('real tools: summing up the perf samples of the worker and the pooled loop');
      perf = {
        hz: PERF_HZ,
        modelCalls: batches.reduce((sum, b) => sum + b.modelCalls, 0),
        worker: await summarizePerf(perfFile, worker.pid),
        pooledLoop: await summarizePerf(perfFile, pooledFloor.child.pid),
      };
      for (const pid of [worker.pid, pooledFloor.child.pid]) rmSync(`/tmp/perf-${pid}.map`, { force: true });
    }
    const result: RealToolsResult = {
      ...(perf ? { perf } : {}),
      concurrency: options.concurrency,
      tasksPerBatch: options.tasks,
      workerCpuMsPerCall: median(batches.map((b) => b.workerCpuMsPerCall)),
      workerCpuMsPerRun: median(batches.map((b) => b.workerCpuMsPerRun)),
      floorCpuMsPerCall: median(batches.map((b) => b.floor.cpuMsPerCall)),
      pooledFloorCpuMsPerCall: median(batches.map((b) => b.pooledFloor.cpuMsPerCall)),
      ratio: median(batches.map((b) => b.ratio)),
      pairRatios: batches.map((b) => b.ratio),
      pooledRatio: median(batches.map((b) => b.pooledRatio)),
      pooledPairRatios: batches.map((b) => b.pooledRatio),
      cpuSpread: spread(batches.map((b) => b.workerCpuMsPerCall)),
      redisCommandsPerCall: median(batches.map((b) => b.redisCommandsPerCall)),
      workerWritesPerCall: median(batches.map((b) => b.workerWritesPerCall)),
      pooledFloorWritesPerCall: median(batches.map((b) => b.pooledFloor.writesPerCall)),
      workerBytesWrittenPerCall: median(batches.map((b) => b.workerBytesWrittenPerCall)),
      pooledFloorBytesWrittenPerCall: median(batches.map((b) => b.pooledFloor.bytesWrittenPerCall)),
      workerBytesReadPerCall: median(batches.map((b) => b.workerBytesReadPerCall)),
      pooledFloorBytesReadPerCall: median(batches.map((b) => b.pooledFloor.bytesReadPerCall)),
      redisScriptCommandsPerCall: median(batches.map((b) => b.redisScriptCommandsPerCall)),
      mysqlQueriesPerCall: median(batches.map((b) => b.mysqlQueriesPerCall)),
      batches,
      unexpectedSamples: Object.fromEntries(samples),
    };
    await worker.stop(10_000);
    await floor.close();
    await pooledFloor.close();
    floor = pooledFloor = undefined;
    if (options.coldTasks > 0 && options.coldRepetitions > 0) {
      const cold = { logLevel: options.coldLogLevel, entry: options.coldEntry };
      const pairs: ColdPair[] = [];
      for (let rep = 0; rep < options.coldRepetitions; rep++) {
        log(
          `real tools: cold pair ${rep + 1}, a fresh worker and a fresh pooled loop, ${options.coldTasks} tasks each`,
        );
        pairs.push(await coldPair(rig, options, cold));
      }
      const m = (f: (p: ColdPair) => number) => median(pairs.map(f));
      result.cold = {
        tasks: options.coldTasks,
        ...cold,
        workerCpuMsPerCall: m((p) => p.worker.wholeCpuMs / p.worker.calls),
        floorCpuMsPerCall: m((p) => p.floor.wholeCpuMs / p.floor.calls),
        ratio: m((p) => p.ratio),
        workerStartCpuMs: m((p) => p.worker.startCpuMs),
        floorStartCpuMs: m((p) => p.floor.startCpuMs),
        workerAfterStartCpuMsPerCall: m((p) => (p.worker.wholeCpuMs - p.worker.startCpuMs) / p.worker.calls),
        floorAfterStartCpuMsPerCall: m((p) => (p.floor.wholeCpuMs - p.floor.startCpuMs) / p.floor.calls),
        afterStartRatio: m((p) => p.afterStartRatio),
        mainThreadRatio: m(
          (p) => p.worker.mainThreadCpuMs / p.worker.calls / (p.floor.mainThreadCpuMs / p.floor.calls),
        ),
        pairs,
      };
    }
    if (options.profile) {
      log(`real tools: profile, ${options.tasks} tasks on a worker under --cpu-prof`);
      worker = startWorker(rig, options.concurrency, [
        ...options.workerNodeArgs,
        '--cpu-prof',
        `--cpu-prof-dir=${profileDir}`,
      ]);
      await workerBatch(rig, worker, options.warmupTasks);
      const p = await workerBatch(rig, worker, options.tasks);
      await worker.stop(20_000);
      const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
      const [from, to] = p.hrWindowUs;
      const summaries = files.map((f) => summarizeProfile(join(profileDir, f), from, to));
      summaries.sort((a, b) => b.totalMs - a.totalMs);
      result.profile = {
        tasks: options.tasks,
        modelCalls: p.bodies.length,
        cpuMsPerCall: p.cpuMs / p.bodies.length,
        summary: summaries[0]!,
        threads: summaries.slice(1).filter((s) => s.totalMs > 0),
      };
      log(`real tools: profile, the pooled loop under --cpu-prof on the same calls`);
      const floorDir = join(profileDir, 'floor');
      const profiled = await Floor.start(dataUrl, sink.url, true, [
        '--cpu-prof',
        `--cpu-prof-dir=${floorDir}`,
      ]);
      try {
        await profiled.replay(jobsOf(p.bodies), options.concurrency);
        const h0 = process.hrtime.bigint();
        const f = await profiled.replay(jobsOf(p.bodies), options.concurrency);
        const h1 = process.hrtime.bigint();
        await profiled.close();
        const floorFiles = readdirSync(floorDir).filter((name) => name.endsWith('.cpuprofile'));
        const floorSummaries = floorFiles
          .map((name) => summarizeProfile(join(floorDir, name), Number(h0 / 1000n), Number(h1 / 1000n)))
          .sort((a, b) => b.totalMs - a.totalMs);
        if (floorSummaries[0])
          result.profile.floor = { cpuMsPerCall: f.cpuMsPerCall, summary: floorSummaries[0] };
      } catch (error) {
        await profiled.close();
        log(`real tools: the loop's profile failed: ${String(error)}`);
      }
    }
    return result;
  } finally {
    await worker?.stop(10_000);
    await floor?.close();
    await pooledFloor?.close();
    await close();
    rmSync(profileDir, { recursive: true, force: true });
  }
}
