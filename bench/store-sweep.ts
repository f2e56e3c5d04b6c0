// `npx tsx bench/store-sweep.ts`: what the store sweeper costs the fleet's step writes. In a MariaDB database of
// its own (af_bench_sweep_*, dropped at the end), BENCH_SWEEP_ROWS (default 200,000) step rows of runs finished 40
// days ago are seeded; then writers write steps of new runs at a steady pace (BENCH_SWEEP_WRITERS × one write per
// 40 ms, through RunsRepository as the journal writes them) for three phases: without the sweeper (baseline),
// while the sweeper prunes the old rows with its defaults (1,000 rows per statement, pause ≥ 50 ms), and without
// it again. Prints, and writes to bench/results/store-sweep-<time>.json, each phase's step-write latency (p50,
// p99, max) and the sweep's rows per second. A benchmark: it asserts nothing.
// BENCH_SWEEP_PAUSE_MS sets the sweeper's least pause between statements.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'mysql2/promise';
import type { StepTrace } from '../src/kernel/types.js';
import { migrate } from '../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../src/store/pool.js';
import { RunsRepository } from '../src/store/runs-repository.js';
import { sweepStore } from '../src/store/retention/store-sweep.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const ROWS = Number(process.env['BENCH_SWEEP_ROWS'] ?? 200_000);
const WRITERS = Number(process.env['BENCH_SWEEP_WRITERS'] ?? 8);
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

/** Old runs of 50 steps each, finished 40 days ago, written 1,000 rows per statement. */
async function seed(pool: Pool): Promise<void> {
  const finished = new Date(Date.now() - 40 * DAY_MS);
  const runs = Math.ceil(ROWS / 50);
  const runRows = Array.from({ length: runs }, (_, i) => [
    `old-${i}`,
    'a task',
    'gpt-4o',
    'tools',
    'succeeded',
    50,
    finished,
    finished,
  ]);
  for (let i = 0; i < runRows.length; i += 1_000) {
    await pool.query(
      'INSERT INTO agent_runs (job_id, task, model, protocol, status, steps, started_at, finished_at) VALUES ?',
      [runRows.slice(i, i + 1_000)],
    );
  }
  const action = JSON.stringify(trace(1).actions);
  for (let first = 0; first < ROWS; first += 1_000) {
    const rows: unknown[][] = [];
    for (let n = first; n < Math.min(first + 1_000, ROWS); n++) {
      rows.push([
        `old-${Math.floor(n / 50)}`,
        (n % 50) + 1,
        'action',
        action,
        OBSERVATION,
        JSON.stringify([OBSERVATION]),
        finished,
      ]);
    }
    await pool.query(
      'INSERT INTO agent_steps (job_id, step, kind, action, observation, observations, created_at) VALUES ?',
      [rows],
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

async function main(): Promise<void> {
  const url = new URL(SERVER);
  url.pathname = `/${DATABASE}`;
  const pool = await createStorePool(url.href, { connectionLimit: WRITERS + 2 });
  try {
    await migrate(pool);
    process.stderr.write(`seeding ${ROWS} old step rows…\n`);
    let started = performance.now();
    await seed(pool);
    process.stderr.write(`seeded in ${Math.round(performance.now() - started)} ms\n`);
    const repository = new RunsRepository(pool);

    process.stderr.write('baseline (no sweeper)…\n');
    const before = await writeSteps(repository, 'before', sleep(BASELINE_MS));

    process.stderr.write('sweeping…\n');
    started = performance.now();
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

    const result = {
      at: new Date().toISOString(),
      rows: ROWS,
      writers: WRITERS,
      writeEveryMs: WRITE_EVERY_MS,
      sweepPauseMs: PAUSE_MS ?? 50,
      load: readFileSync('/proc/loadavg', 'utf8').trim(),
      sweep: {
        deleted: deleted.agent_steps,
        ms: Math.round(sweepMs),
        rowsPerS: Math.round(deleted.agent_steps / (sweepMs / 1000)),
      },
      before: summary(before),
      during: summary(during),
      after: summary(after),
    };
    const table = [
      'phase            writes   p50 ms   p99 ms   max ms',
      ...(['before', 'during', 'after'] as const).map((phase) => {
        const s = result[phase];
        return `${phase.padEnd(15)}${String(s.writes).padStart(8)}${String(s.p50Ms).padStart(9)}${String(s.p99Ms).padStart(9)}${String(s.maxMs).padStart(9)}`;
      }),
      `sweep: ${result.sweep.deleted} rows in ${result.sweep.ms} ms (${result.sweep.rowsPerS} rows/s)`,
    ];
    process.stdout.write(`${table.join('\n')}\n`);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/store-sweep-${result.at.replace(/:/g, '-')}.json`,
      `${JSON.stringify(result, null, 2)}\n`,
    );
  } finally {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`).catch(() => undefined);
    await pool.end();
  }
}

await main();
