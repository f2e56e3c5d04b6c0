// `npx tsx bench/store-sweep.ts`: what the store sweeper costs the fleet's step writes. In a MariaDB database of
// its own (af_bench_sweep_*, dropped at the end), BENCH_SWEEP_ROWS (default 200,000) step rows of runs finished 40
// days ago are seeded; then steps of new runs are written for three phases: without the sweeper (baseline,
// BENCH_SWEEP_BASELINE_MS), while the sweeper prunes the old rows with its defaults (1,000 rows per statement,
// pause ≥ 50 ms), and without it again. Prints, and writes to bench/results/store-sweep-<time>.json, each phase's
// write latency (p50, p99, max) and the sweep's rows per second. A benchmark: it asserts nothing.
//
// Who writes the steps (BENCH_SWEEP_WRITERS):
// - a number (default 8), the synthetic mode: that many writers in this process, one RunsRepository.appendSteps
//   each every 40 ms, each write timed here.
// - `fleet`: a real worker process (bench/lib/fleet.ts, as the scenarios start one) runs batches of multi-step
//   tasks against the scripted model, continuously through the three phases; its own sweeper is kept off (this
//   process holds the sweeper's lease), and this process sweeps as the worker's sweeper would (sweepStore with the
//   worker's defaults and its view of the queue). The latency is the worker's own: its run journal's queries
//   (agentfleet_store_write_seconds), each phase's share taken from the histogram's growth between scrapes of its
//   /metrics, so p50 and p99 are interpolated within buckets (as histogram_quantile does) and the max is the
//   bound of the highest bucket reached. BENCH_SWEEP_CONCURRENCY (default 50) slots, BENCH_SWEEP_STEPS (default 6)
//   steps a task, the model answering in BENCH_SWEEP_MODEL_MS (default 200): about concurrency / latency step rows
//   a second.
// BENCH_SWEEP_PAUSE_MS sets the sweeper's least pause between statements.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { FleetClient } from '../src/client/fleet-client.js';
import type { StepTrace } from '../src/kernel/types.js';
import { TASKS_QUEUE } from '../src/queue/names.js';
import { migrate } from '../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../src/store/pool.js';
import { RunsRepository } from '../src/store/runs-repository.js';
import { sweepStore, type SweepOutcome } from '../src/store/retention/store-sweep.js';
import { OutcomeStore } from '../src/worker/outcome-store.js';
import { jobStateOn, storeSweepLeaseKey } from '../src/worker/store-sweeper.js';
import { killAllChildrenNow, type Child } from './lib/children.js';
import {
  cleanupAllNamespaces,
  createNamespace,
  QueueWatch,
  REDIS_URL,
  startAgentWorker,
  startModelServer,
  type Namespace,
} from './lib/fleet.js';
import { DEFAULT_BENCH_TOOL } from './lib/steps-model.js';
import { enqueueTasks } from './lib/tasks.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const ROWS = Number(process.env['BENCH_SWEEP_ROWS'] ?? 200_000);
/** `fleet`: a real worker writes the steps; else the number of synthetic writers. */
const FLEET = process.env['BENCH_SWEEP_WRITERS'] === 'fleet';
const WRITERS = FLEET ? 0 : Number(process.env['BENCH_SWEEP_WRITERS'] ?? 8);
const CONCURRENCY = Number(process.env['BENCH_SWEEP_CONCURRENCY'] ?? 50);
const STEPS = Number(process.env['BENCH_SWEEP_STEPS'] ?? 6);
const MODEL_MS = Number(process.env['BENCH_SWEEP_MODEL_MS'] ?? 200);
const BASELINE_MS = Number(process.env['BENCH_SWEEP_BASELINE_MS'] ?? 20_000);
const WRITE_EVERY_MS = 40;
/** The sweeper's least pause between statements; unset, its default (50 ms). */
const PAUSE_MS = process.env['BENCH_SWEEP_PAUSE_MS']
  ? Number(process.env['BENCH_SWEEP_PAUSE_MS'])
  : undefined;
const DAY_MS = 86_400_000;
const DATABASE = `af_bench_sweep_${randomBytes(4).toString('hex')}`;
const OBSERVATION = 'x'.repeat(300);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function trace(step: number): StepTrace {
  return {
    runId: 'bench',
    step,
    kind: 'action',
    actions: [
      { id: 'call_1', tool: 'sql_query', args: { sql: 'SELECT 1' }, ok: true, errorCode: null, latencyMs: 3 },
    ],
    observations: [OBSERVATION],
    promptTokens: 800,
    completionTokens: 40,
    costUsd: 0.001,
    latencyMs: 300,
    modelLatencyMs: 250,
    modelCalls: 1,
    error: null,
    totals: {
      promptTokens: 800,
      completionTokens: 40,
      totalTokens: 840,
      costUsd: 0.001,
      steps: step,
      maxSteps: 50,
      toolCalls: step,
    },
  };
}

/** Step rows a seeding statement writes: about 50 MB, generated by the server (nothing crosses the wire). */
const SEED_CHUNK = 50_000;
const DIGITS = `(SELECT 0 AS d ${[1, 2, 3, 4, 5, 6, 7, 8, 9].map((d) => `UNION ALL SELECT ${d}`).join(' ')})`;
/** 0…99,999: five digits' cross join, in SQL both MariaDB and MySQL run. */
const NUMBERS = `(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n
  FROM ${['a', 'b', 'c', 'e', 'f'].map((t) => `${DIGITS} ${t}`).join(', ')})`;

/**
 * Old runs of 50 steps each, finished 40 days ago: the runs 1,000 rows per statement, the steps SEED_CHUNK rows
 * per INSERT … SELECT.
 */
async function seed(pool: Pool): Promise<void> {
  const finished = new Date(Date.now() - 40 * DAY_MS);
  const runs = Math.ceil(ROWS / 50);
  for (let first = 0; first < runs; first += 1_000) {
    const runRows = Array.from({ length: Math.min(1_000, runs - first) }, (_, i) => [
      `old-${first + i}`,
      'a task',
      'gpt-4o',
      'tools',
      'succeeded',
      50,
      finished,
      finished,
    ]);
    await pool.query(
      'INSERT INTO agent_runs (job_id, task, model, protocol, status, steps, started_at, finished_at) VALUES ?',
      [runRows],
    );
  }
  const action = JSON.stringify(trace(1).actions);
  const observations = JSON.stringify([OBSERVATION]);
  for (let first = 0; first < ROWS; first += SEED_CHUNK) {
    await pool.query(
      `INSERT INTO agent_steps (job_id, step, kind, action, observation, observations, created_at)
       SELECT CONCAT('old-', (? + n) DIV 50), (? + n) MOD 50 + 1, 'action', ?, ?, ?, ?
       FROM ${NUMBERS} numbers WHERE n < ? ORDER BY n`,
      [first, first, action, OBSERVATION, observations, finished, Math.min(SEED_CHUNK, ROWS - first)],
    );
  }
}

/** Writers writing steps of new runs at a steady pace until `until` resolves; each write's latency in ms. */
async function writeSteps(
  repository: RunsRepository,
  phase: string,
  until: Promise<unknown>,
): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void until.then(() => (done = true));
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      let run = 0;
      let step = 0;
      let jobId = '';
      while (!done) {
        if (step % 50 === 0) {
          jobId = `${phase}-${writer}-${run++}`;
          await repository.startRun({
            jobId,
            task: 'a task',
            model: 'gpt-4o',
            protocol: 'tools',
            attempt: 1,
          });
          step = 0;
        }
        const started = performance.now();
        await repository.appendSteps(jobId, [trace(++step)]);
        latencies.push(performance.now() - started);
        await sleep(WRITE_EVERY_MS);
      }
    }),
  );
  return latencies;
}

function summary(latencies: readonly number[]) {
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    writes: latencies.length,
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    maxMs: round(Math.max(...latencies)),
  };
}

/** A port free now, for the worker's metrics server. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** What a scrape of the worker's /metrics says of its store writes and steps. */
interface Scrape {
  at: number;
  /** Cumulative counts of agentfleet_store_write_seconds by upper bound (seconds; +Inf as Infinity). */
  buckets: Map<number, number>;
  count: number;
  sum: number;
  steps: number;
  jobs: number;
  /** The highest agent_steps id: the rows past it are written later. */
  maxStepId: number;
}

const sample = (page: string, name: string): number[] =>
  [...page.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) => Number(m[1]));

async function scrape(port: number, pool: Pool): Promise<Scrape> {
  const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const buckets = new Map<number, number>();
  for (const m of page.matchAll(/^agentfleet_store_write_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)) {
    buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  }
  const [rows] = await pool.query<RowDataPacket[]>('SELECT COALESCE(MAX(id), 0) AS id FROM agent_steps');
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    at: performance.now(),
    buckets,
    count: sum(sample(page, 'agentfleet_store_write_seconds_count')),
    sum: sum(sample(page, 'agentfleet_store_write_seconds_sum')),
    steps: sum(sample(page, 'agentfleet_steps_total')),
    jobs: sum(sample(page, 'agentfleet_jobs_total')),
    maxStepId: Number(rows[0]?.['id']),
  };
}

/** The q-quantile of a histogram's cumulative buckets, interpolated within its bucket as histogram_quantile does. */
function quantile(buckets: readonly (readonly [number, number])[], q: number): number {
  const total = buckets[buckets.length - 1]?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [bound, cumulative] of buckets) {
    if (cumulative >= rank) {
      if (bound === Infinity) return lower;
      return lower + ((bound - lower) * (rank - below)) / Math.max(1, cumulative - below);
    }
    lower = bound;
    below = cumulative;
  }
  return lower;
}

/** One phase of the worker's writes, from the growth of its metrics between two scrapes. */
async function phaseOf(from: Scrape, to: Scrape, pool: Pool) {
  const buckets = [...to.buckets]
    .sort(([a], [b]) => a - b)
    .map(([bound, cumulative]) => [bound, cumulative - (from.buckets.get(bound) ?? 0)] as const);
  const queries = to.count - from.count;
  const seconds = (to.at - from.at) / 1000;
  // Rows actually in the table: the ids the phase's writes took (an upsert may burn ids, so they are counted).
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT COUNT(*) AS n FROM agent_steps WHERE id > ? AND id <= ?',
    [from.maxStepId, to.maxStepId],
  );
  const stepRows = Number(rows[0]?.['n']);
  const ms = (value: number) => Math.round(value * 100_000) / 100;
  const highest = buckets.find(([, cumulative]) => cumulative === queries)?.[0] ?? NaN;
  return {
    seconds: Math.round(seconds * 10) / 10,
    queries,
    queriesPerS: Math.round(queries / seconds),
    p50Ms: ms(quantile(buckets, 0.5)),
    p99Ms: ms(quantile(buckets, 0.99)),
    /** The bound of the highest bucket reached: every query of the phase took at most this. */
    maxBucketMs: highest === Infinity ? 'over 2500' : ms(highest),
    meanMs: ms((to.sum - from.sum) / Math.max(1, queries)),
    stepRows,
    stepRowsPerS: Math.round(stepRows / seconds),
    /** The worker's own count of the steps it ran (agentfleet_steps_total). */
    stepsRun: to.steps - from.steps,
    jobsDone: to.jobs - from.jobs,
    /** Queries at or under each bucket's bound (`le=<ms>`, cumulative), for other percentiles. */
    buckets: Object.fromEntries(
      buckets.map(([bound, n]) => [`le=${bound === Infinity ? '+Inf' : ms(bound)}`, n]),
    ),
  };
}

/**
 * Keeps the worker's slots full: a batch of `concurrency` tasks enqueued whenever fewer than two batches' worth
 * are left to do, until stopped. Throws on a failed job or a dead worker.
 */
function feed(client: FleetClient, watch: QueueWatch, worker: Child, done: number) {
  let stopped = false;
  let enqueued = done;
  let batch = 0;
  const running = (async () => {
    while (!stopped) {
      const { completed, failed } = await watch.counts();
      if (failed > 0)
        throw new Error(`${failed} job(s) failed. Worker output:\n${worker.output().slice(-4000)}`);
      if (!worker.alive()) throw new Error(`the worker exited. Output:\n${worker.output().slice(-4000)}`);
      if (enqueued - completed < 2 * CONCURRENCY) {
        await enqueueTasks(client, `b${++batch}`, CONCURRENCY, STEPS);
        enqueued += CONCURRENCY;
      } else {
        await sleep(50);
      }
    }
  })();
  return {
    running,
    async stop() {
      stopped = true;
      await running;
      return { batches: batch, tasks: enqueued - done };
    },
  };
}

/** The three phases with a real worker writing; the bench sweeps as the worker's sweeper would. */
async function fleetPhases(pool: Pool, ns: Namespace) {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  // The worker's own sweeper off: the lease is the bench's for the whole run, so its rounds (at start and every
  // STORE_SWEEP_INTERVAL_MS, here a week) skip.
  await redis.set(storeSweepLeaseKey(ns.prefix), 'store-sweep bench', 'PX', 86_400_000);
  const model = await startModelServer(MODEL_MS, DEFAULT_BENCH_TOOL);
  const port = await freePort();
  const worker = startAgentWorker(ns, model, {
    concurrency: CONCURRENCY,
    env: {
      METRICS_PORT: String(port),
      METRICS_PORT_SPAN: '1',
      STORE_SWEEP_INTERVAL_MS: '604800000',
    },
  });
  const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, TASKS_QUEUE);
  const tasks = new Queue(TASKS_QUEUE, { connection: redis, prefix: ns.prefix });
  try {
    process.stderr.write(`fleet: a worker with ${CONCURRENCY} slots, warm-up batch…\n`);
    await enqueueTasks(client, 'warm', CONCURRENCY, STEPS);
    await watch.waitForCompleted(CONCURRENCY, worker, 120_000);
    const feeder = feed(client, watch, worker, CONCURRENCY);
    // A failed job or a dead worker ends the run at once, whatever phase it is in.
    feeder.running.catch(() => undefined);
    const never = new Promise<never>(() => undefined);
    const during = <T>(work: Promise<T>): Promise<T> =>
      Promise.race([work, feeder.running.then(() => never)]);
    await during(sleep(5_000)); // the batches reach their pace
    process.stderr.write('baseline (no sweeper)…\n');
    const s0 = await scrape(port, pool);
    await during(sleep(BASELINE_MS));
    const s1 = await scrape(port, pool);
    process.stderr.write('sweeping…\n');
    const started = performance.now();
    const deleted: SweepOutcome = await during(
      sweepStore({
        pool,
        keepStepsDays: 30,
        keepRunsDays: 400,
        logger: { info: () => undefined },
        jobState: jobStateOn(tasks, new OutcomeStore(redis, ns.prefix)),
        ...(PAUSE_MS === undefined ? {} : { pauseMs: PAUSE_MS }),
      }),
    );
    const sweepMs = performance.now() - started;
    const s2 = await scrape(port, pool);
    process.stderr.write('baseline again…\n');
    await during(sleep(BASELINE_MS));
    const s3 = await scrape(port, pool);
    const fed = await feeder.stop();
    return {
      concurrency: CONCURRENCY,
      stepsPerTask: STEPS,
      modelMs: MODEL_MS,
      ...fed,
      sweep: {
        deleted: deleted.agent_steps,
        ms: Math.round(sweepMs),
        rowsPerS: Math.round(deleted.agent_steps / (sweepMs / 1000)),
      },
      before: await phaseOf(s0, s1, pool),
      during: await phaseOf(s1, s2, pool),
      after: await phaseOf(s2, s3, pool),
    };
  } finally {
    await worker.stop(10_000);
    await model.child.stop();
    await client.close();
    watch.close();
    await tasks.close();
    redis.disconnect();
  }
}

/** The three phases with synthetic writers in this process. */
async function syntheticPhases(pool: Pool) {
  const repository = new RunsRepository(pool);
  process.stderr.write('baseline (no sweeper)…\n');
  const before = await writeSteps(repository, 'before', sleep(BASELINE_MS));

  process.stderr.write('sweeping…\n');
  const started = performance.now();
  const sweep = sweepStore({
    pool,
    keepStepsDays: 30,
    keepRunsDays: 0,
    logger: { info: () => undefined },
    ...(PAUSE_MS === undefined ? {} : { pauseMs: PAUSE_MS }),
  });
  const during = await writeSteps(repository, 'during', sweep);
  const deleted = await sweep;
  const sweepMs = performance.now() - started;

  process.stderr.write('baseline again…\n');
  const after = await writeSteps(repository, 'after', sleep(BASELINE_MS));
  return {
    writers: WRITERS,
    writeEveryMs: WRITE_EVERY_MS,
    sweep: {
      deleted: deleted.agent_steps,
      ms: Math.round(sweepMs),
      rowsPerS: Math.round(deleted.agent_steps / (sweepMs / 1000)),
    },
    before: summary(before),
    during: summary(during),
    after: summary(after),
  };
}

async function main(): Promise<void> {
  const ns = FLEET ? createNamespace('sweep', true) : undefined;
  if (ns) {
    // Interrupted: the worker and the model server killed, the keys and the database removed (5 s at most).
    process.on('exit', killAllChildrenNow);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        killAllChildrenNow();
        const limit = new Promise((resolve) => setTimeout(resolve, 5_000).unref());
        void Promise.race([cleanupAllNamespaces(), limit]).finally(() => process.exit(130));
      });
    }
  }
  const url = new URL(ns ? ns.mysqlUrl : SERVER);
  if (!ns) url.pathname = `/${DATABASE}`;
  const database = ns?.database ?? DATABASE;
  const pool = await createStorePool(url.href, { connectionLimit: WRITERS + 4 });
  try {
    await migrate(pool);
    process.stderr.write(`seeding ${ROWS} old step rows…\n`);
    const started = performance.now();
    await seed(pool);
    const seedMs = Math.round(performance.now() - started);
    process.stderr.write(`seeded in ${seedMs} ms\n`);
    const phases = ns ? await fleetPhases(pool, ns) : await syntheticPhases(pool);
    const result = {
      at: new Date().toISOString(),
      mode: ns ? 'fleet' : 'synthetic',
      rows: ROWS,
      seedMs,
      sweepPauseMs: PAUSE_MS ?? 50,
      load: readFileSync('/proc/loadavg', 'utf8').trim(),
      ...phases,
    };
    const table = ns
      ? [
          'phase     journal queries/s   p50 ms   p99 ms   max ≤ ms   mean ms   step rows/s',
          ...(['before', 'during', 'after'] as const).map((phase) => {
            const s = (phases as Awaited<ReturnType<typeof fleetPhases>>)[phase];
            return `${phase.padEnd(10)}${String(s.queriesPerS).padStart(17)}${String(s.p50Ms).padStart(9)}${String(s.p99Ms).padStart(9)}${String(s.maxBucketMs).padStart(11)}${String(s.meanMs).padStart(10)}${String(s.stepRowsPerS).padStart(14)}`;
          }),
        ]
      : [
          'phase            writes   p50 ms   p99 ms   max ms',
          ...(['before', 'during', 'after'] as const).map((phase) => {
            const s = (phases as Awaited<ReturnType<typeof syntheticPhases>>)[phase];
            return `${phase.padEnd(15)}${String(s.writes).padStart(8)}${String(s.p50Ms).padStart(9)}${String(s.p99Ms).padStart(9)}${String(s.maxMs).padStart(9)}`;
          }),
        ];
    table.push(
      `sweep: ${phases.sweep.deleted} rows in ${phases.sweep.ms} ms (${phases.sweep.rowsPerS} rows/s)`,
    );
    process.stdout.write(`${table.join('\n')}\n`);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/store-sweep-${result.at.replace(/:/g, '-')}.json`,
      `${JSON.stringify(result, null, 2)}\n`,
    );
  } finally {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`).catch(() => undefined);
    await pool.end();
    await ns?.cleanup().catch(() => undefined);
  }
}

await main();
