// Scenario 3: agent steps through ONE real worker process (`node --import tsx workers/agent-worker.ts`,
// traces in MySQL and checkpoints in Redis as in production, logs at warn), the scripted model in its own
// process at zero latency. After a warm-up batch, each measured batch reads the worker's CPU (utime + stime
// from /proc) before its tasks are enqueued and after its last job completed.
import { FleetClient } from '../../src/client/fleet-client.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import type { Child } from '../lib/children.js';
import {
  createNamespace,
  log,
  QueueWatch,
  REDIS_URL,
  startAgentWorker,
  startModelServer,
  type ModelServer,
  type Namespace,
} from '../lib/fleet.js';
import { cpuMsOf, cpuMsOfAll, pidsByComm, syscallsOf } from '../lib/proc.js';
import { checkResults, enqueueTasks, type BatchCheck } from '../lib/tasks.js';

export interface AgentStepsBatch {
  tasks: number;
  steps: number;
  modelCalls: number;
  elapsedMs: number;
  stepsPerSecond: number;
  workerCpuMsPerStep: number;
  /** Worker CPU over wall time in the window: 1.0 is one core busy all the time. */
  workerCpuShare: number;
  /** The worker's read and write system calls per step (sockets, mostly): steady, unlike CPU time. */
  workerReadsPerStep: number;
  workerWritesPerStep: number;
  modelServerCpuMsPerCall: number;
  /** Shared servers: other clients of the same Redis / MariaDB count too. */
  redisCpuMsPerStep: number | null;
  mysqlCpuMsPerStep: number | null;
  check: BatchCheck;
}

export interface AgentStepsOptions {
  tasks: number;
  warmupTasks: number;
  steps: number;
  concurrency: number;
  tool: string;
  workerNodeArgs: string[];
}

/** One worker and its model, warmed up; `measure()` runs one measured batch. */
export class AgentStepsSession {
  private batches = 0;
  private completed = 0;

  private constructor(
    private readonly options: AgentStepsOptions,
    private readonly ns: Namespace,
    private readonly client: FleetClient,
    private readonly watch: QueueWatch,
    private readonly model: ModelServer,
    readonly worker: Child,
  ) {}

  static async start(options: AgentStepsOptions): Promise<AgentStepsSession> {
    const ns = createNamespace('steps', true);
    const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix });
    const watch = new QueueWatch(ns.prefix, TASKS_QUEUE);
    let model: ModelServer | undefined;
    try {
      model = await startModelServer(0, options.tool);
      const worker = startAgentWorker(ns, model, {
        concurrency: options.concurrency,
        nodeArgs: options.workerNodeArgs,
      });
      const session = new AgentStepsSession(options, ns, client, watch, model, worker);
      log(`agent steps: warm-up ${options.warmupTasks} tasks of ${options.steps} steps`);
      await enqueueTasks(client, 'warm', options.warmupTasks, options.steps);
      session.completed = options.warmupTasks;
      await watch.waitForCompleted(session.completed, worker, 90_000);
      return session;
    } catch (error) {
      await model?.child.stop();
      await client.close();
      watch.close();
      await ns.cleanup();
      throw error;
    }
  }

  async measure(): Promise<{ batch: AgentStepsBatch; bodies: Record<string, unknown>[] }> {
    const { options, client, watch, model, worker } = this;
    const label = `run${++this.batches}`;
    const before = (await model.requests(Number.MAX_SAFE_INTEGER)).total;
    const redisPids = pidsByComm(['redis-server']);
    const mysqlPids = pidsByComm(['mariadbd', 'mysqld']);
    log(`agent steps: batch ${this.batches}, ${options.tasks} tasks, concurrency ${options.concurrency}`);
    const cpu0 = cpuMsOf(worker.pid);
    const io0 = syscallsOf(worker.pid);
    const server0 = cpuMsOf(model.child.pid);
    const redis0 = cpuMsOfAll(redisPids);
    const mysql0 = cpuMsOfAll(mysqlPids);
    const t0 = Date.now();
    const jobIds = await enqueueTasks(client, label, options.tasks, options.steps);
    this.completed += options.tasks;
    await watch.waitForCompleted(this.completed, worker, 120_000);
    const t1 = await watch.lastFinishedOn();
    const cpu1 = cpuMsOf(worker.pid);
    const io1 = syscallsOf(worker.pid);
    const server1 = cpuMsOf(model.child.pid);
    const redis1 = cpuMsOfAll(redisPids);
    const mysql1 = cpuMsOfAll(mysqlPids);

    const check = await checkResults(client, jobIds, options.steps);
    const recorded = await model.requests(before);
    if (recorded.failures.length > 0) throw new Error(`scripted model failures: ${recorded.failures[0]}`);
    const elapsedMs = t1 - t0;
    const steps = check.steps;
    return {
      batch: {
        tasks: options.tasks,
        steps,
        modelCalls: recorded.bodies.length,
        elapsedMs,
        stepsPerSecond: steps / (elapsedMs / 1000),
        workerCpuMsPerStep: (cpu1 - cpu0) / steps,
        workerCpuShare: (cpu1 - cpu0) / elapsedMs,
        workerReadsPerStep: (io1.reads - io0.reads) / steps,
        workerWritesPerStep: (io1.writes - io0.writes) / steps,
        modelServerCpuMsPerCall: (server1 - server0) / recorded.bodies.length,
        redisCpuMsPerStep: redisPids.length ? (redis1 - redis0) / steps : null,
        mysqlCpuMsPerStep: mysqlPids.length ? (mysql1 - mysql0) / steps : null,
        check,
      },
      bodies: recorded.bodies,
    };
  }

  async close(): Promise<void> {
    try {
      await this.worker.stop(10_000);
      await this.model.child.stop();
    } finally {
      await this.client.close();
      this.watch.close();
      await this.ns.cleanup();
    }
  }
}

/** What the unknown-tool observation says the worker offers ("(none)" when it wires no tools). */
export function workerToolsFrom(bodies: readonly Record<string, unknown>[]): string | null {
  for (const body of bodies) {
    const text = JSON.stringify(body.messages ?? []);
    const match = /Available tools: ([^."\\]*)/.exec(text);
    if (match) return match[1] ?? null;
  }
  return null;
}
