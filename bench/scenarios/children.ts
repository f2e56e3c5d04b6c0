// Scenario 10, agents that call agents (docs/child-agents.md): what a call of a child agent costs against the same
// work done by an in-process tool, measured in the same run on the same workers.
//
// One fleet (bench/fleets/children.config.ts): a parent agent offered a child agent `bench_child` (each call a
// task job of its own; the parent parks in BullMQ's waiting-children and resumes with the answer) and a read-only
// in-process tool `bench_fact` returning the very text the child answers (bench/lib/children-model.ts). Two real
// worker processes (`--import tsx workers/agent-worker.ts`, native tool calls), the scripted model in its own
// process. Each repetition runs the baseline batch (the tool) then the child batch, seconds apart.
//
// 1. Per call: `parents` parents (default 50) each making ONE call, every job in flight at once (the workers'
//    slots exceed parents + children), the model at `latencyMs` for both. A parent's wall time is its job's
//    `timestamp` (added) to `finishedOn`: median and p95. Worker CPU (/proc/<pid>/stat of both workers) per tree.
//    A child call adds one model call (latencyMs) by construction: the row "beyond the child's model call"
//    subtracts it.
// 2. Throughput: `treeParents` parents (default 100) × `treeCalls` calls (default 3) on the same 2 workers at
//    `treeConcurrency` slots each (default 10, as scenario 3), the model at `treeLatencyMs` (default 0: CPU-bound,
//    as scenario 3). Trees per second and model calls per second, from the add to the last parent's finishedOn.
import { Redis } from 'ioredis';
import { FleetClient } from '../../src/client/fleet-client.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import { childAnswer, childrenTaskText, CHILDREN_MODEL, type ChildMode } from '../lib/children-model.js';
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
import { cpuMsOf, cpuMsOfAll, pidsByComm } from '../lib/proc.js';
import { median, spread } from '../lib/stats.js';

export interface ChildrenBatch {
  mode: ChildMode;
  parents: number;
  callsPerParent: number;
  /** From the add to the last parent's finishedOn. */
  elapsedMs: number;
  /** Parents' wall time, added → finished. */
  wallMedianMs: number;
  wallP95Ms: number;
  treesPerSecond: number;
  modelCalls: number;
  modelCallsPerSecond: number;
  /** Both workers' CPU over the batch, per parent (its tree: its own job and its children's). */
  workerCpuMsPerTree: number;
  /** redis-server's CPU over the batch per tree (a shared server: other clients count). */
  redisCpuMsPerTree: number;
  /** Parents that did not succeed with the expected answer, by status/stopReason. */
  unexpected: Record<string, number>;
}

export interface ChildrenPart {
  parents: number;
  callsPerParent: number;
  concurrencyPerWorker: number;
  workers: number;
  latencyMs: number;
  /** Medians over the repetitions; `tool` is the baseline. */
  tool: ChildrenBatch;
  child: ChildrenBatch;
  /** Per repetition, child over tool, then their median. */
  ratios: {
    wallMedian: number[];
    wallP95: number[];
    cpuPerTree: number[];
    treesPerSecond: number[];
    modelCallsPerSecond: number[];
  };
  spread: { childWallMedian: number; toolWallMedian: number; childCpu: number; toolCpu: number };
  batches: ChildrenBatch[];
}

export interface ChildrenResult {
  perCall: ChildrenPart;
  throughput: ChildrenPart;
}

const p95 = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)] ?? NaN;
};

interface Rig {
  ns: Namespace;
  client: FleetClient;
  watch: QueueWatch;
  redis: Redis;
  model: ModelServer;
  workers: Child[];
  /** Jobs completed so far on agent-tasks (children are task jobs too). */
  done: number;
  label: number;
}

function startWorkers(rig: Rig, count: number, concurrency: number, nodeArgs: string[]): Child[] {
  return Array.from({ length: count }, () =>
    startAgentWorker(rig.ns, rig.model, {
      concurrency,
      nodeArgs,
      env: { FLEET_CONFIG: 'bench/fleets/children.config.ts', AGENT_PROTOCOL: 'tools' },
    }),
  );
}

async function runBatch(rig: Rig, mode: ChildMode, parents: number, calls: number): Promise<ChildrenBatch> {
  const name = `${mode === 'bench_child' ? 'c' : 't'}${++rig.label}`;
  const tasks = Array.from({ length: parents }, (_, i) => ({
    agent: 'bench-parent',
    task: childrenTaskText(`${name}-${i}`, calls, mode),
  }));
  const models0 = (await rig.model.requests(Number.MAX_SAFE_INTEGER)).total;
  const cpuOfWorkers = () => rig.workers.reduce((sum, w) => sum + cpuMsOf(w.pid), 0);
  const redisPids = pidsByComm(['redis-server']);
  const cpu0 = cpuOfWorkers();
  const redis0 = cpuMsOfAll(redisPids);
  const t0 = Date.now();
  const jobIds = (await rig.client.enqueueMany(tasks)).map((job) => job.jobId);
  rig.done += parents * (mode === 'bench_child' ? 1 + calls : 1);
  await rig.watch.waitForCompleted(rig.done, rig.workers[0]!, 120_000);
  const cpu1 = cpuOfWorkers();
  const redis1 = cpuMsOfAll(redisPids);
  const models1 = (await rig.model.requests(Number.MAX_SAFE_INTEGER)).total;

  const pipeline = rig.redis.pipeline();
  for (const id of jobIds) pipeline.hmget(`${rig.ns.prefix}:${TASKS_QUEUE}:${id}`, 'timestamp', 'finishedOn');
  const times = ((await pipeline.exec()) ?? []).map(([, value]) => (value as string[]).map(Number));
  const walls = times.map(([added, finished]) => finished! - added!);
  const lastFinished = Math.max(...times.map(([, finished]) => finished!));

  const unexpected: Record<string, number> = {};
  const results = await Promise.all(jobIds.map((id) => rig.client.getResult(id)));
  results.forEach((result, i) => {
    const facts = Array.from({ length: calls }, (_, k) => childAnswer(`fact ${name}-${i}-${k}`));
    const expected = `${name}-${i}: ${facts.join(' | ')}`;
    if (!result) unexpected['no result'] = (unexpected['no result'] ?? 0) + 1;
    else if (result.status !== 'succeeded' || result.answer !== expected) {
      const key = `${result.status}/${result.stopReason}: ${String(result.answer).slice(0, 80)}`;
      unexpected[key] = (unexpected[key] ?? 0) + 1;
    }
  });
  const elapsedMs = lastFinished - t0;
  const modelCalls = models1 - models0;
  return {
    mode,
    parents,
    callsPerParent: calls,
    elapsedMs,
    wallMedianMs: median(walls),
    wallP95Ms: p95(walls),
    treesPerSecond: parents / (elapsedMs / 1000),
    modelCalls,
    modelCallsPerSecond: modelCalls / (elapsedMs / 1000),
    workerCpuMsPerTree: (cpu1 - cpu0) / parents,
    redisCpuMsPerTree: (redis1 - redis0) / parents,
    unexpected,
  };
}

function medianBatch(batches: ChildrenBatch[]): ChildrenBatch {
  const m = (key: keyof ChildrenBatch) => median(batches.map((b) => b[key] as number));
  const unexpected: Record<string, number> = {};
  for (const b of batches)
    for (const [key, n] of Object.entries(b.unexpected)) unexpected[key] = (unexpected[key] ?? 0) + n;
  return {
    mode: batches[0]!.mode,
    parents: batches[0]!.parents,
    callsPerParent: batches[0]!.callsPerParent,
    elapsedMs: m('elapsedMs'),
    wallMedianMs: m('wallMedianMs'),
    wallP95Ms: m('wallP95Ms'),
    treesPerSecond: m('treesPerSecond'),
    modelCalls: m('modelCalls'),
    modelCallsPerSecond: m('modelCallsPerSecond'),
    workerCpuMsPerTree: m('workerCpuMsPerTree'),
    redisCpuMsPerTree: m('redisCpuMsPerTree'),
    unexpected,
  };
}

async function part(
  rig: Rig,
  label: string,
  options: { parents: number; calls: number; repetitions: number; warmupParents: number },
): Promise<Omit<ChildrenPart, 'concurrencyPerWorker' | 'workers' | 'latencyMs'>> {
  log(`children ${label}: warm-up, ${options.warmupParents} parents each way`);
  await runBatch(rig, 'bench_fact', options.warmupParents, options.calls);
  await runBatch(rig, 'bench_child', options.warmupParents, options.calls);
  const tools: ChildrenBatch[] = [];
  const childs: ChildrenBatch[] = [];
  for (let rep = 1; rep <= options.repetitions; rep++) {
    log(
      `children ${label}: batch ${rep}, ${options.parents} parents × ${options.calls} call(s), tool then child`,
    );
    tools.push(await runBatch(rig, 'bench_fact', options.parents, options.calls));
    childs.push(await runBatch(rig, 'bench_child', options.parents, options.calls));
  }
  const per = (key: keyof ChildrenBatch) =>
    childs.map((c, i) => (c[key] as number) / (tools[i]![key] as number));
  return {
    parents: options.parents,
    callsPerParent: options.calls,
    tool: medianBatch(tools),
    child: medianBatch(childs),
    ratios: {
      wallMedian: per('wallMedianMs'),
      wallP95: per('wallP95Ms'),
      cpuPerTree: per('workerCpuMsPerTree'),
      treesPerSecond: per('treesPerSecond'),
      modelCallsPerSecond: per('modelCallsPerSecond'),
    },
    spread: {
      childWallMedian: spread(childs.map((b) => b.wallMedianMs)),
      toolWallMedian: spread(tools.map((b) => b.wallMedianMs)),
      childCpu: spread(childs.map((b) => b.workerCpuMsPerTree)),
      toolCpu: spread(tools.map((b) => b.workerCpuMsPerTree)),
    },
    batches: [...tools, ...childs],
  };
}

export async function children(options: {
  parents: number;
  latencyMs: number;
  treeParents: number;
  treeCalls: number;
  treeConcurrency: number;
  treeLatencyMs: number;
  repetitions: number;
  workerNodeArgs: string[];
}): Promise<ChildrenResult> {
  const workerCount = 2;
  const ns = createNamespace('children', true);
  const rig: Rig = {
    ns,
    client: new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix }),
    watch: new QueueWatch(ns.prefix, TASKS_QUEUE),
    redis: new Redis(REDIS_URL),
    model: await startModelServer(options.latencyMs, '', CHILDREN_MODEL),
    workers: [],
    done: 0,
    label: 0,
  };
  try {
    // Part 1: every parent and child in flight at once, so a parent's wall time has no queueing in it.
    const perCallSlots = Math.max(10, options.parents);
    rig.workers = startWorkers(rig, workerCount, perCallSlots, options.workerNodeArgs);
    const perCall = await part(rig, `per call (${options.latencyMs} ms a model call)`, {
      parents: options.parents,
      calls: 1,
      repetitions: options.repetitions,
      warmupParents: 20,
    });
    await Promise.all(rig.workers.map((w) => w.stop(10_000)));
    await rig.model.child.stop();

    rig.model = await startModelServer(options.treeLatencyMs, '', CHILDREN_MODEL);
    rig.workers = startWorkers(rig, workerCount, options.treeConcurrency, options.workerNodeArgs);
    const throughput = await part(rig, `throughput (${options.treeLatencyMs} ms a model call)`, {
      parents: options.treeParents,
      calls: options.treeCalls,
      repetitions: options.repetitions,
      warmupParents: 30,
    });
    return {
      perCall: {
        ...perCall,
        concurrencyPerWorker: perCallSlots,
        workers: workerCount,
        latencyMs: options.latencyMs,
      },
      throughput: {
        ...throughput,
        concurrencyPerWorker: options.treeConcurrency,
        workers: workerCount,
        latencyMs: options.treeLatencyMs,
      },
    };
  } finally {
    await Promise.all(rig.workers.map((w) => w.stop(10_000)));
    await rig.model.child.stop();
    await rig.client.close();
    rig.watch.close();
    rig.redis.disconnect();
    await ns.cleanup();
  }
}
