// Scenario 4: throughput when the model is slow. The scripted model answers after `latencyMs`; one worker
// process runs `concurrency` jobs at once. Ideal: concurrency / latency model calls per second, i.e.
// concurrency / (steps × latency) jobs per second.
//
// Two figures per batch (after a warm-up wave that opens the connections):
// - sustained, the judged one: model calls per second while the worker holds all its slots, from the moment
//   the last slot of the first wave makes its first call to the moment the batch's last job makes its first (no
//   job waits any more after that), from the model server's arrival times. Job changes, start-up and every step's
//   overhead count; filling the slots at the start and the drain at the end, when fewer jobs are in flight, do not.
// - whole batch: from the add to the last completion, jobs per second; fill and drain included, so it depends on
//   how many waves the batch has.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetClient } from '../../src/client/fleet-client.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import {
  createNamespace,
  log,
  QueueWatch,
  MYSQL_SERVER,
  mysqlQuestions,
  REDIS_URL,
  startAgentWorker,
  startModelServer,
} from '../lib/fleet.js';
import { loopStats, readProbe, type LoopStats } from '../lib/probe.js';
import mysql from 'mysql2/promise';
import { cpuMsOf, cpuMsOfAll, machineBusyMs, pidsByComm, selfAndDescendants } from '../lib/proc.js';
import { median, spread } from '../lib/stats.js';
import { taskText } from '../lib/steps-model.js';
import { checkResults, enqueueTasks, type BatchCheck } from '../lib/tasks.js';
import { jobsOf, replayJobs } from './latency-floor.js';

/** Model calls per second while every slot is held, over the ideal (see the top of the file). */
export interface Sustained {
  overIdeal: number;
  callsPerSecond: number;
  windowMs: number;
  calls: number;
}

export interface LatencyBatch {
  sustained: Sustained;
  elapsedMs: number;
  jobsPerSecond: number;
  achievedOverIdeal: number;
  /** Mean time from a job's start to its end, against steps × latency. */
  meanJobMs: number;
  /** (mean job time − ideal) / steps: what a step costs on top of the model's latency. */
  overheadMsPerStep: number;
  /** From the add to the last job's start: how long the worker took to fill its slots (2nd wave included). */
  lastStartMs: number;
  workerCpuMsPerStep: number;
  workerCpuShare: number;
  /** MariaDB statements per agent step over the batch (SHOW GLOBAL STATUS Questions: every client counts). */
  mysqlQuestionsPerStep: number;
  /** Cores in use over the batch: the whole machine, and each process that shares it with the worker. */
  cores: CoreShares;
  breakdown: JobBreakdown;
  /** The same calls replayed by a bare `openai` loop, as many jobs in flight (latency-floor.ts). */
  bare: {
    elapsedMs: number;
    achievedOverIdeal: number;
    sustained: Sustained;
    errors: number;
    /** CPU of the loop's process (this one) per call it made: the client's own cost at this concurrency. */
    cpuMsPerCall: number;
  };
  /** The worker's event loop over the batch (bench/heap-probe.ts). */
  loop: LoopStats;
  check: BatchCheck;
}

export interface CoreShares {
  machine: number;
  workers: number;
  modelServer: number;
  redis: number;
  mariadb: number;
  /** This process: enqueueing the batch and watching it. */
  bench: number;
}

/**
 * Where a job's time beyond steps × latency goes, from the model server's arrival times: from the job's
 * start to its first model request; between a reply being due and the job's next request (per step, mean
 * and 90th percentile); from the last reply being due to the job's completion.
 */
export interface JobBreakdown {
  startMs: number;
  betweenStepsMs: number;
  betweenStepsP90Ms: number;
  endMs: number;
}

export interface LatencyResult {
  jobs: number;
  /** Slots of all the workers. */
  concurrency: number;
  workers: number;
  stepsPerTask: number;
  latencyMs: number;
  idealJobsPerSecond: number;
  idealJobMs: number;
  /** Medians over the repetitions. */
  sustained: Sustained;
  bareSustainedOverIdeal: number;
  bareCpuMsPerCall: number;
  sustainedOverBare: number;
  jobsPerSecond: number;
  achievedOverIdeal: number;
  /** The bare `openai` loop's achieved / ideal on the same calls, and the worker's throughput over the loop's. */
  bareAchievedOverIdeal: number;
  overBare: number;
  meanJobMs: number;
  overheadMsPerStep: number;
  workerCpuMsPerStep: number;
  workerCpuShare: number;
  mysqlQuestionsPerStep: number;
  cores: CoreShares;
  breakdown: JobBreakdown;
  loop: LoopStats;
  spread: number;
  batches: LatencyBatch[];
}

function sustainedOf(
  entries: readonly { task: string; receivedAt: number }[],
  concurrency: number,
  latencyMs: number,
): Sustained {
  const firstCalls = new Map<string, number>();
  for (const entry of entries) if (!firstCalls.has(entry.task)) firstCalls.set(entry.task, entry.receivedAt);
  const firsts = [...firstCalls.values()].sort((a, b) => a - b);
  if (firsts.length <= concurrency) throw new Error(`scenario 4 needs more than ${concurrency} jobs a batch`);
  const from = firsts[concurrency - 1]!;
  const to = firsts[firsts.length - 1]!;
  const calls = entries.filter((e) => e.receivedAt >= from && e.receivedAt < to).length;
  const callsPerSecond = calls / ((to - from) / 1000);
  return {
    overIdeal: callsPerSecond / (concurrency / (latencyMs / 1000)),
    callsPerSecond,
    windowMs: to - from,
    calls,
  };
}

function breakdownOf(
  entries: readonly { task: string; receivedAt: number }[],
  tasks: readonly string[],
  timings: readonly { processedOn: number; finishedOn: number }[],
  latencyMs: number,
): JobBreakdown {
  const byTask = new Map<string, number[]>();
  for (const entry of entries) {
    const list = byTask.get(entry.task) ?? [];
    list.push(entry.receivedAt);
    byTask.set(entry.task, list);
  }
  const starts: number[] = [];
  const gaps: number[] = [];
  const ends: number[] = [];
  tasks.forEach((task, i) => {
    const arrivals = byTask.get(task);
    const timing = timings[i];
    if (!arrivals?.length || !timing) return;
    starts.push(arrivals[0]! - timing.processedOn);
    for (let k = 1; k < arrivals.length; k++) gaps.push(arrivals[k]! - arrivals[k - 1]! - latencyMs);
    ends.push(timing.finishedOn - (arrivals[arrivals.length - 1]! + latencyMs));
  });
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const sorted = [...gaps].sort((a, b) => a - b);
  return {
    startMs: mean(starts),
    betweenStepsMs: mean(gaps),
    betweenStepsP90Ms: sorted[Math.floor(sorted.length * 0.9)] ?? NaN,
    endMs: mean(ends),
  };
}

interface SharedCpu {
  at: number;
  machine: number;
  modelServer: number;
  redis: number;
  mariadb: number;
  bench: number;
}

/** CPU so far of the machine and of each process the worker shares it with (the servers are found by name). */
function sharedCpuMs(modelServerPid: number): SharedCpu {
  const usage = process.cpuUsage();
  return {
    at: Date.now(),
    machine: machineBusyMs(),
    modelServer: cpuMsOf(modelServerPid),
    redis: cpuMsOfAll(pidsByComm(['redis-server'])),
    mariadb: cpuMsOfAll(pidsByComm(['mariadbd', 'mysqld'])),
    bench: (usage.user + usage.system) / 1000,
  };
}

function coreShares(before: SharedCpu, after: SharedCpu, workersCpuMs: number): CoreShares {
  const elapsed = Math.max(1, after.at - before.at);
  const share = (key: keyof Omit<SharedCpu, 'at'>) => (after[key] - before[key]) / elapsed;
  return {
    machine: share('machine'),
    workers: workersCpuMs / elapsed,
    modelServer: share('modelServer'),
    redis: share('redis'),
    mariadb: share('mariadb'),
    bench: share('bench'),
  };
}

export async function latency(options: {
  jobs: number;
  warmupJobs: number;
  steps: number;
  concurrency: number;
  latencyMs: number;
  tool: string;
  repetitions: number;
  /** Extra node flags for the worker (BENCH_WORKER_NODE_ARGS). */
  workerNodeArgs: string[];
  /** Worker processes, each with `concurrency` slots (default 1); the ideal counts all their slots. */
  workers?: number;
  /**
   * Instead: one `agent-worker --processes N` (the supervisor and its N workers, each with `concurrency` slots),
   * its CPU summed over them; no event-loop probe.
   */
  supervised?: number;
}): Promise<LatencyResult> {
  const ns = createNamespace('latency', true);
  const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, TASKS_QUEUE);
  const probeFile = join(tmpdir(), `${ns.prefix}-probe.jsonl`);
  const model = await startModelServer(options.latencyMs, options.tool);
  // The probe only reads (every 250 ms): memory and the event loop's utilization and delay (the first worker's).
  const supervised = options.supervised;
  const workers = supervised
    ? [
        startAgentWorker(ns, model, {
          concurrency: options.concurrency,
          nodeArgs: options.workerNodeArgs,
          args: ['--processes', String(supervised)],
        }),
      ]
    : Array.from({ length: options.workers ?? 1 }, (_, i) =>
        startAgentWorker(ns, model, {
          concurrency: options.concurrency,
          ...(i === 0 ? { probeFile } : {}),
          nodeArgs: options.workerNodeArgs,
        }),
      );
  const worker = workers[0]!;
  const processes = supervised ?? workers.length;
  const slots = options.concurrency * processes;
  const cpuOfWorkers = () =>
    supervised
      ? cpuMsOfAll(selfAndDescendants(worker.pid))
      : workers.reduce((sum, w) => sum + cpuMsOf(w.pid), 0);
  const admin = await mysql.createConnection(MYSQL_SERVER);
  try {
    log(`latency: warm-up ${options.warmupJobs} jobs at ${options.latencyMs} ms a call`);
    await enqueueTasks(client, 'warm', options.warmupJobs, options.steps);
    await watch.waitForCompleted(options.warmupJobs, worker, 90_000);

    const idealJobsPerSecond = slots / ((options.steps * options.latencyMs) / 1000);
    const idealJobMs = options.steps * options.latencyMs;
    const batches: LatencyBatch[] = [];
    let done = options.warmupJobs;
    for (let rep = 1; rep <= options.repetitions; rep++) {
      log(
        `latency: batch ${rep}, ${options.jobs} jobs, ${slots} in flight (${processes} worker process(es)), ${options.latencyMs} ms a call`,
      );
      const before = (await model.requests(Number.MAX_SAFE_INTEGER)).total;
      const questions0 = await mysqlQuestions(admin);
      const cpu0 = cpuOfWorkers();
      const shares0 = sharedCpuMs(model.child.pid);
      const t0 = Date.now();
      const jobIds = await enqueueTasks(client, `run${rep}`, options.jobs, options.steps);
      done += options.jobs;
      await watch.waitForCompleted(done, worker, 120_000);
      const t1 = await watch.lastFinishedOn();
      const cpu1 = cpuOfWorkers();
      const shares1 = sharedCpuMs(model.child.pid);
      const questions1 = await mysqlQuestions(admin);

      const check = await checkResults(client, jobIds, options.steps);
      const timings = await watch.timings(jobIds);
      const tasks = jobIds.map((_, i) => taskText(`run${rep}-${i}`, options.steps));
      const timeline = await model.timeline(before);
      const breakdown = breakdownOf(timeline, tasks, timings, options.latencyMs);
      // Read before the replay below, which sends the same tasks again.
      const calls = jobsOf((await model.requests(before)).bodies);
      // The loop's first replay warms its client up (the worker had a warm-up wave of its own).
      if (rep === 1) await replayJobs(model.baseURL, calls, slots);
      log(`latency: the same ${calls.length} jobs by a bare openai loop, ${slots} in flight`);
      const beforeReplay = (await model.requests(Number.MAX_SAFE_INTEGER)).total;
      const bareCpu0 = process.cpuUsage();
      const replay = await replayJobs(model.baseURL, calls, slots);
      const bareCpu = process.cpuUsage(bareCpu0);
      const replayTimeline = await model.timeline(beforeReplay);
      const elapsedMs = t1 - t0;
      const jobsPerSecond = options.jobs / (elapsedMs / 1000);
      const meanJobMs = timings.reduce((sum, t) => sum + (t.finishedOn - t.processedOn), 0) / timings.length;
      batches.push({
        sustained: sustainedOf(timeline, slots, options.latencyMs),
        elapsedMs,
        jobsPerSecond,
        achievedOverIdeal: jobsPerSecond / idealJobsPerSecond,
        meanJobMs,
        overheadMsPerStep: (meanJobMs - idealJobMs) / options.steps,
        lastStartMs: Math.max(...timings.map((t) => t.processedOn)) - t0,
        workerCpuMsPerStep: (cpu1 - cpu0) / check.steps,
        workerCpuShare: (cpu1 - cpu0) / elapsedMs,
        // Less the two reads of the counter themselves.
        mysqlQuestionsPerStep: (questions1 - questions0 - 1) / check.steps,
        cores: coreShares(shares0, shares1, cpu1 - cpu0),
        breakdown,
        bare: {
          elapsedMs: replay.elapsedMs,
          achievedOverIdeal: calls.length / (replay.elapsedMs / 1000) / idealJobsPerSecond,
          sustained: sustainedOf(replayTimeline, slots, options.latencyMs),
          errors: replay.errors,
          cpuMsPerCall: (bareCpu.user + bareCpu.system) / 1000 / Math.max(1, calls.flat().length),
        },
        loop: loopStats(readProbe(probeFile), t0, t1),
        check,
      });
    }
    return {
      jobs: options.jobs,
      concurrency: slots,
      workers: processes,
      stepsPerTask: options.steps,
      latencyMs: options.latencyMs,
      idealJobsPerSecond,
      idealJobMs,
      sustained: {
        overIdeal: median(batches.map((b) => b.sustained.overIdeal)),
        callsPerSecond: median(batches.map((b) => b.sustained.callsPerSecond)),
        windowMs: median(batches.map((b) => b.sustained.windowMs)),
        calls: median(batches.map((b) => b.sustained.calls)),
      },
      bareSustainedOverIdeal: median(batches.map((b) => b.bare.sustained.overIdeal)),
      bareCpuMsPerCall: median(batches.map((b) => b.bare.cpuMsPerCall)),
      sustainedOverBare: median(batches.map((b) => b.sustained.overIdeal / b.bare.sustained.overIdeal)),
      jobsPerSecond: median(batches.map((b) => b.jobsPerSecond)),
      achievedOverIdeal: median(batches.map((b) => b.achievedOverIdeal)),
      bareAchievedOverIdeal: median(batches.map((b) => b.bare.achievedOverIdeal)),
      overBare: median(batches.map((b) => b.achievedOverIdeal / b.bare.achievedOverIdeal)),
      meanJobMs: median(batches.map((b) => b.meanJobMs)),
      overheadMsPerStep: median(batches.map((b) => b.overheadMsPerStep)),
      workerCpuMsPerStep: median(batches.map((b) => b.workerCpuMsPerStep)),
      workerCpuShare: median(batches.map((b) => b.workerCpuShare)),
      mysqlQuestionsPerStep: median(batches.map((b) => b.mysqlQuestionsPerStep)),
      cores: {
        machine: median(batches.map((b) => b.cores.machine)),
        workers: median(batches.map((b) => b.cores.workers)),
        modelServer: median(batches.map((b) => b.cores.modelServer)),
        redis: median(batches.map((b) => b.cores.redis)),
        mariadb: median(batches.map((b) => b.cores.mariadb)),
        bench: median(batches.map((b) => b.cores.bench)),
      },
      breakdown: {
        startMs: median(batches.map((b) => b.breakdown.startMs)),
        betweenStepsMs: median(batches.map((b) => b.breakdown.betweenStepsMs)),
        betweenStepsP90Ms: median(batches.map((b) => b.breakdown.betweenStepsP90Ms)),
        endMs: median(batches.map((b) => b.breakdown.endMs)),
      },
      loop: {
        elu: median(batches.map((b) => b.loop.elu)),
        delayMeanMs: median(batches.map((b) => b.loop.delayMeanMs)),
        delayP99Ms: median(batches.map((b) => b.loop.delayP99Ms)),
        delayMaxMs: Math.max(...batches.map((b) => b.loop.delayMaxMs)),
      },
      spread: spread(batches.map((b) => b.sustained.overIdeal)),
      batches,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await admin.end();
    await model.child.stop();
    await client.close();
    watch.close();
    await ns.cleanup();
    rmSync(probeFile, { force: true });
  }
}
