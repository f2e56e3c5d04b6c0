// Scenario 5: memory per in-flight job. A worker at `concurrency` jobs in flight, the model slow enough that
// they stay in flight for seconds. Its RSS (/proc/<pid>/status) and, through bench/heap-probe.ts, its live
// heap after a forced full GC are read at idle after a warm-up wave and then during the plateau with every
// slot busy; the differences divided by the jobs in flight are the cost of one job.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetClient } from '../../src/client/fleet-client.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import type { Child } from '../lib/children.js';
import {
  createNamespace,
  log,
  QueueWatch,
  REDIS_URL,
  sleep,
  startAgentWorker,
  startModelServer,
} from '../lib/fleet.js';
import { readProbe } from '../lib/probe.js';
import { rssKbOf } from '../lib/proc.js';
import { median } from '../lib/stats.js';
import { checkResults, enqueueTasks, type BatchCheck } from '../lib/tasks.js';

interface Sample {
  inFlight: number;
  rssKb: number;
  heapUsedKb: number;
  externalKb: number;
}

export interface MemoryResult {
  concurrency: number;
  latencyMs: number;
  idle: Sample;
  plateau: Sample;
  inFlight: number;
  heapKbPerJob: number;
  rssKbPerJob: number;
  externalKbPerJob: number;
  /** Largest heapUsed of the probe's 250 ms samples (no forced GC) while the jobs ran, in KB. */
  peakHeapUsedKb: number;
  check: BatchCheck;
}

/** RSS now, then the heap after a full GC in the worker (SIGUSR2 to the probe). */
async function sample(worker: Child, file: string, watch: QueueWatch, seq: number): Promise<Sample> {
  const inFlight = (await watch.counts()).active;
  const rssKb = rssKbOf(worker.pid);
  process.kill(worker.pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = readProbe(file).find((l) => l.kind !== 'tick' && l.seq === seq);
    if (line) {
      if (line.kind !== 'gc') throw new Error('heap probe: gc() unavailable (needs --expose-gc)');
      return { inFlight, rssKb, heapUsedKb: line.heapUsed / 1024, externalKb: line.external / 1024 };
    }
    if (Date.now() > deadline) throw new Error(`heap probe did not answer. Output:\n${worker.output()}`);
    await sleep(20);
  }
}

function medianSample(samples: Sample[]): Sample {
  return {
    inFlight: median(samples.map((s) => s.inFlight)),
    rssKb: median(samples.map((s) => s.rssKb)),
    heapUsedKb: median(samples.map((s) => s.heapUsedKb)),
    externalKb: median(samples.map((s) => s.externalKb)),
  };
}

export async function memory(options: {
  warmupJobs: number;
  steps: number;
  concurrency: number;
  latencyMs: number;
  tool: string;
}): Promise<MemoryResult> {
  const ns = createNamespace('memory', true);
  const heapFile = join(tmpdir(), `${ns.prefix}-heap.jsonl`);
  const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, TASKS_QUEUE);
  const model = await startModelServer(options.latencyMs, options.tool);
  const worker = startAgentWorker(ns, model, {
    concurrency: options.concurrency,
    probeFile: heapFile,
    exposeGc: true,
  });
  let seq = 0;
  try {
    log(`memory: warm-up ${options.warmupJobs} jobs`);
    await enqueueTasks(client, 'warm', options.warmupJobs, options.steps);
    await watch.waitForCompleted(options.warmupJobs, worker, 90_000);
    await sleep(1_000);
    const idleSamples: Sample[] = [];
    for (let i = 0; i < 3; i++) {
      idleSamples.push(await sample(worker, heapFile, watch, ++seq));
      await sleep(300);
    }

    log(`memory: ${options.concurrency} jobs in flight`);
    const t0 = Date.now();
    const jobIds = await enqueueTasks(client, 'run', options.concurrency, options.steps);
    const jobMs = options.steps * options.latencyMs;
    // Every slot busy, then samples spread over the middle of the jobs' lives.
    while ((await watch.counts()).active < options.concurrency && Date.now() - t0 < jobMs / 3)
      await sleep(20);
    const plateauSamples: Sample[] = [];
    for (const at of [0.3, 0.5, 0.7]) {
      await sleep(Math.max(0, t0 + jobMs * at - Date.now()));
      plateauSamples.push(await sample(worker, heapFile, watch, ++seq));
    }
    await watch.waitForCompleted(options.warmupJobs + options.concurrency, worker, 120_000);
    const check = await checkResults(client, jobIds, options.steps);

    const idle = medianSample(idleSamples);
    const plateau = medianSample(plateauSamples);
    const inFlight = plateau.inFlight;
    if (inFlight < options.concurrency / 2) {
      throw new Error(`only ${inFlight} of ${options.concurrency} jobs were in flight during the plateau`);
    }
    const ticks = readProbe(heapFile).filter((l) => l.kind === 'tick' && l.t >= t0);
    return {
      concurrency: options.concurrency,
      latencyMs: options.latencyMs,
      idle,
      plateau,
      inFlight,
      heapKbPerJob: (plateau.heapUsedKb - idle.heapUsedKb) / inFlight,
      rssKbPerJob: (plateau.rssKb - idle.rssKb) / inFlight,
      externalKbPerJob: (plateau.externalKb - idle.externalKb) / inFlight,
      peakHeapUsedKb: Math.max(...ticks.map((l) => l.heapUsed / 1024)),
      check,
    };
  } finally {
    await worker.stop(10_000);
    await model.child.stop();
    await client.close();
    watch.close();
    await ns.cleanup();
    rmSync(heapFile, { force: true });
  }
}
