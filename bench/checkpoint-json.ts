// `npx tsx bench/checkpoint-json.ts`: what serializing a run's checkpoints costs, the kernel's way (each message of
// the transcript serialized once, src/kernel/checkpoint-queue.ts) against JSON.stringify of the whole state, on the
// same states. A run of N steps takes a checkpoint after each step, each holding the transcript so far: a SQL call
// and its ten-row result per step. For runs of 5, 30 and 100 steps (BENCH_CHECKPOINT_RUNS runs each, default 200),
// the two ways alternate over 5 rounds; prints, and writes to bench/results/checkpoint-json-<time>.json, the
// median µs per checkpoint of each and their ratio. Each round serializes fresh runs (no message serialized before).
// A benchmark: it asserts only that both ways give the same JSON.
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { StateSerializer } from '../src/kernel/checkpoint-queue.js';
import type { ChatMessage } from '../src/kernel/messages.js';
import type { RunState } from '../src/kernel/types.js';
import { median } from './lib/stats.js';

const RUNS = Number(process.env['BENCH_CHECKPOINT_RUNS'] ?? 200);
const ROUNDS = 5;

/** The states a run of `steps` steps checkpoints, one after each step, sharing their messages as a run does. */
function runCheckpoints(steps: number, run: number): RunState[] {
  let history: ChatMessage[] = [];
  const states: RunState[] = [];
  for (let step = 1; step <= steps; step++) {
    const id = `call_${run}_${step}`;
    const sql = `SELECT c.name, SUM(o.total) AS q FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id > ${step} GROUP BY c.name ORDER BY q DESC`;
    const rows = Array.from({ length: 10 }, (_, i) => [`customer "${i}" of run ${run}`, (i + step) * 1234.5]);
    history = [
      ...history,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id, type: 'function', function: { name: 'sql_query', arguments: JSON.stringify({ sql }) } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: JSON.stringify({ columns: ['name', 'q'], rows }) },
    ];
    states.push({
      version: 1,
      runId: `run-${run}`,
      task: 'Find the top 3 customers by Q1 2024 sales and thank each by email.',
      protocol: 'tools',
      budget: { maxSteps: 200, maxTokens: 1_000_000, maxCostUsd: 10, deadlineMs: 600_000 },
      startedAt: 0,
      history,
      summary: null,
      usage: { promptTokens: 1000 * step, completionTokens: 50 * step },
      steps: step,
      toolCalls: step,
      modelCalls: step,
      pending: null,
      repeat: { signature: null, count: 0 },
      result: null,
    });
  }
  return states;
}

/** `serializerOf` is asked once per run, as the kernel has one checkpoint queue per run. */
function timePerCheckpoint(states: RunState[][], serializerOf: () => (state: RunState) => string): number {
  let bytes = 0;
  const t0 = performance.now();
  for (const run of states) {
    const serialize = serializerOf();
    for (const state of run) bytes += serialize(state).length;
  }
  const ms = performance.now() - t0;
  if (bytes === 0) throw new Error('nothing serialized');
  return (ms * 1000) / states.reduce((n, run) => n + run.length, 0);
}

const figures = [];
for (const steps of [5, 30, 100]) {
  const sample = runCheckpoints(steps, -1).at(-1)!;
  if (new StateSerializer().json(sample).length !== JSON.stringify(sample).length) {
    throw new Error('the two ways differ');
  }
  const whole: number[] = [];
  const once: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const fresh = () => Array.from({ length: RUNS }, (_, run) => runCheckpoints(steps, run));
    whole.push(timePerCheckpoint(fresh(), () => (state) => JSON.stringify(state)));
    once.push(
      timePerCheckpoint(fresh(), () => {
        const serializer = new StateSerializer();
        return (state) => serializer.json(state);
      }),
    );
  }
  const bytes = runCheckpoints(steps, 0).reduce((n, state) => n + JSON.stringify(state).length, 0) / steps;
  figures.push({
    steps,
    checkpointBytesMean: Math.round(bytes),
    jsonStringifyUs: median(whole),
    serializerUs: median(once),
    ratio: median(once) / median(whole),
  });
}
const report = {
  at: new Date().toISOString(),
  node: process.version,
  runs: RUNS,
  rounds: ROUNDS,
  loadavg: loadavg(),
  figures,
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  `bench/results/checkpoint-json-${report.at.replace(/:/g, '-')}.json`,
  `${JSON.stringify(report, null, 2)}\n`,
);
