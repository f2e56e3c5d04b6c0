// Scenario 13: two versions of the worker on scenario 7's shape (the reference task, its real tools, traces on),
// batch by batch on one rig: A is this checkout's worker, B the worker of another checkout (BENCH_AB_DIR).
//
// Why: scenario 7 puts a worker's batch next to a bare loop's, one after the other, and its pairs spread by 0.4 on
// this 2-core machine (the machine's speed drifts between them); a change worth a few per cent of the worker's CPU
// cannot show there. Here both sides are workers of the same shape, warmed alike, each batch on the same tasks,
// their order alternated, and the idle one is stopped (SIGSTOP: it takes no job and spends no CPU), so B/A of a
// pair is what the change did, give or take the drift within one pair.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Child } from '../lib/children.js';
import { log, sleep } from '../lib/fleet.js';
import { median } from '../lib/stats.js';
import { uncommittedDiff } from '../lib/uncommitted-diff.js';
import { add, check, openRig, startWorker, workerBatch } from './real-tools.js';

export interface WorkerABOptions {
  /** The other checkout, with its own node_modules (a symlink to this one's does). */
  dir: string;
  tasks: number;
  warmupTasks: number;
  repetitions: number;
  concurrency: number;
  workerNodeArgs: string[];
}

export interface WorkerABPair {
  /** CPU per model call of each worker over the same tasks, ms. */
  a: number;
  b: number;
  ratio: number;
  bFirst: boolean;
}

export interface WorkerABResult {
  dir: string;
  /** `git describe --always --dirty` of each side. */
  versionA: string;
  versionB: string;
  /** B's uncommitted changes (bench/lib/uncommitted-diff.ts): what an experiment's B changed. */
  diffB: string;
  tasksPerBatch: number;
  aCpuMsPerCall: number;
  bCpuMsPerCall: number;
  /** Median of the pairs' B/A. */
  ratio: number;
  /** B's CPU over all pairs over A's. */
  totalRatio: number;
  pairs: WorkerABPair[];
  /** Runs that did not end as the scripted model leads them to, by kind, per side. */
  unexpected: { a: Record<string, number>; b: Record<string, number> };
}

export async function workerAB(options: WorkerABOptions): Promise<WorkerABResult> {
  if (!existsSync(join(options.dir, 'workers/agent-worker.ts'))) {
    throw new Error(
      `BENCH_AB_DIR=${options.dir}: not a checkout of agent-fleet (no workers/agent-worker.ts)`,
    );
  }
  if (!existsSync(join(options.dir, 'node_modules'))) {
    throw new Error(`BENCH_AB_DIR=${options.dir} has no node_modules: npm ci there, or link this checkout's`);
  }
  const { rig, close } = await openRig();
  let a: Child | undefined;
  let b: Child | undefined;
  try {
    a = startWorker(rig, options.concurrency, options.workerNodeArgs);
    b = startWorker(rig, options.concurrency, options.workerNodeArgs, { cwd: options.dir });
    const unexpected = { a: {}, b: {} };
    const batch = async (side: 'a' | 'b', tasks: number): Promise<number> => {
      const [running, idle] = side === 'a' ? [a!, b!] : [b!, a!];
      idle.process.kill('SIGSTOP');
      try {
        const r = await workerBatch(rig, running, tasks);
        add(unexpected[side], await check(rig, r.jobIds));
        return r.cpuMs / r.bodies.length;
      } finally {
        idle.process.kill('SIGCONT');
        // What the stopped one's timers owe runs now, outside the next batch.
        await sleep(200);
      }
    };
    // Two rounds each: the first batch of each also waits for its process to be ready.
    for (let round = 1; round <= 2; round++) {
      log(`A/B: warm-up ${round} of 2, ${options.warmupTasks} tasks on each worker`);
      await batch('a', options.warmupTasks);
      await batch('b', options.warmupTasks);
    }
    const pairs: WorkerABPair[] = [];
    for (let rep = 0; rep < options.repetitions; rep++) {
      const bFirst = rep % 2 === 1;
      const first = await batch(bFirst ? 'b' : 'a', options.tasks);
      const second = await batch(bFirst ? 'a' : 'b', options.tasks);
      const [ms_a, ms_b] = bFirst ? [second, first] : [first, second];
      pairs.push({ a: ms_a, b: ms_b, ratio: ms_b / ms_a, bFirst });
      log(
        `A/B: pair ${rep + 1}, A ${ms_a.toFixed(2)} B ${ms_b.toFixed(2)} ms a call, B/A ${(ms_b / ms_a).toFixed(3)}`,
      );
    }
    const sum = (values: number[]) => values.reduce((x, y) => x + y, 0);
    return {
      dir: options.dir,
      versionA: versionOf(process.cwd()),
      versionB: versionOf(options.dir),
      diffB: uncommittedDiff(options.dir),
      tasksPerBatch: options.tasks,
      aCpuMsPerCall: median(pairs.map((p) => p.a)),
      bCpuMsPerCall: median(pairs.map((p) => p.b)),
      ratio: median(pairs.map((p) => p.ratio)),
      totalRatio: sum(pairs.map((p) => p.b)) / sum(pairs.map((p) => p.a)),
      pairs,
      unexpected,
    };
  } finally {
    for (const w of [a, b]) if (w?.alive()) w.process.kill('SIGCONT');
    await a?.stop(10_000);
    await b?.stop(10_000);
    await close();
  }
}

function versionOf(dir: string): string {
  return git(dir, ['describe', '--always', '--dirty']).trim() || 'unknown';
}

function git(dir: string, args: string[]): string {
  try {
    return execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
  } catch {
    return '';
  }
}
