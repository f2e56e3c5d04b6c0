// Scenario 11, notes across tasks (docs/notes.md): what a recalled correction saves on the second run of a task,
// and what recall adds to the first, measured in the same run against the same task with notes off.
//
// The demo's reference task (top 3 customers by Q1 2024 sales, a thank-you email to each) against the demo's
// scripted model (src/demo/reference-model.ts) in its own process over HTTP: its first query sums `o.amount`, a
// column the seeded `orders` table does not have, so MariaDB refuses it through the worker's real `sql_query`;
// the corrected query, three emails, the answer: 4 model calls. Given a recalled correction note (the
// `recall_notes` result at the head of its transcript) it writes the corrected query first.
// Two real worker processes (native tool calls), one per mode, each on a namespace of its own (queue prefix and
// MySQL store), the SQL tools on a private copy of the demo data database, send_email to the demo SMTP sink:
//   off  AGENT_NOTES=off: the task twice;
//   on   AGENT_NOTES=on:  the task twice, under a tenant of its own per repetition, so run 1 starts with no note
//        (notes are kept per agent and tenant) and run 2 with what run 1 left.
// Each repetition runs both modes, the one first alternating. Per run: model calls, prompt and completion tokens
// and dollars from the result's usage, cross-checked against the scripted server's own accounting of the run's
// calls (runs are one at a time, so a run's calls are the server's requests between its add and its result);
// latency is the job's `timestamp` (added) to `finishedOn`.
import { Redis } from 'ioredis';
import { FleetClient } from '../../src/client/fleet-client.js';
import { REFERENCE_TASK } from '../../src/demo/reference-model.js';
import { startSmtpSink, type SmtpSink } from '../../src/demo/smtp-sink.js';
import { DEFAULT_MODEL } from '../../src/kernel/defaults.js';
import { costUsd } from '../../src/kernel/pricing.js';
import { RECALL_TOOL } from '../../src/kernel/recalled-notes.js';
import { priceOf } from '../../src/llm/price-table.js';
import { TASKS_QUEUE } from '../../src/queue/names.js';
import type { Child } from '../lib/children.js';
import {
  createNamespace,
  log,
  REDIS_URL,
  startAgentWorker,
  startModelServer,
  type ModelServer,
  type Namespace,
} from '../lib/fleet.js';
import { median } from '../lib/stats.js';
import { seedPrivateData } from './real-tools.js';

export type NotesMode = 'off' | 'on';

export interface NotesRun {
  mode: NotesMode;
  /** 1: the task's first run under its tenant; 2: the same task right after. */
  run: 1 | 2;
  tenant: string;
  jobId: string;
  status: string;
  steps: number;
  /** Model calls, as the scripted server received them. */
  modelCalls: number;
  /** From the result's usage. */
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** The scripted server's own accounting of the run's calls, and those priced as the worker prices them. */
  server: { promptTokens: number; completionTokens: number; costUsd: number };
  /** The server's prompt tokens of each call, in order. */
  promptTokensPerCall: number[];
  /** Job added → finished. */
  latencyMs: number;
  /** Notes the run opened with (the result's notesUsed), and whether its first call carried the recall. */
  notesUsed: number;
  recallAtHead: boolean;
  /** The column each of its sql_query calls summed (`o.amount`, `o.total`), in order. */
  sumColumns: string[];
  /** Emails the sink received during the run. */
  emails: number;
  /** Tools the first request offered the model. */
  toolsOffered: string[];
}

export interface NotesRepetition {
  order: NotesMode[];
  off: [NotesRun, NotesRun];
  on: [NotesRun, NotesRun];
}

type Figure = 'modelCalls' | 'promptTokens' | 'completionTokens' | 'costUsd' | 'latencyMs';
const FIGURES: readonly Figure[] = ['modelCalls', 'promptTokens', 'completionTokens', 'costUsd', 'latencyMs'];

export interface NotesMemoryResult {
  repetitions: number;
  latencyMs: number;
  model: string;
  /** Medians over the repetitions, per mode and run. */
  medians: Record<NotesMode, Record<'run1' | 'run2', Record<Figure, number>>>;
  /** Median of the per-repetition ratios on / off, per run. */
  ratios: Record<'run1' | 'run2', Record<Figure, number>>;
  /** The per-repetition ratios themselves. */
  ratioSeries: Record<'run1' | 'run2', Record<Figure, number[]>>;
  /**
   * Where the prompt tokens of notes on come from, from the first call of each run (medians): what notes on adds to
   * a run with no note yet (on run 1 − off run 1: nothing, since such a run is offered no `recall_notes`), and what
   * a run opening with a note carries in every call (on run 2 − on run 1: the recall at the head and the tool).
   */
  promptTokensPerCall: { toolDefinition: number; recallHead: number; firstCallOff: number };
  /** Largest relative difference between a result's usage and the server's accounting, over every run. */
  crossCheck: { promptTokens: number; completionTokens: number; costUsd: number };
  /** Runs that did not succeed with the expected shape, by a short description. */
  unexpected: Record<string, number>;
  runs: NotesRepetition[];
}

interface Rig {
  model: ModelServer;
  sink: SmtpSink;
  redis: Redis;
  modes: Record<NotesMode, { ns: Namespace; client: FleetClient; worker: Child }>;
}

const price = priceOf(DEFAULT_MODEL);

/** The column summed by a query (`SUM(o.total)` → `o.total`). */
const sumColumn = (sql: string): string => /SUM\(([\w.]+)\)/i.exec(sql)?.[1] ?? '?';

/** The sql_query calls the model made, read from the last request's transcript (the whole run's). */
function sqlCalls(body: Record<string, unknown> | undefined): string[] {
  const messages = (body?.['messages'] ?? []) as {
    role: string;
    tool_calls?: { function: { name: string; arguments: string } }[];
  }[];
  const sql: string[] = [];
  for (const m of messages) {
    for (const call of m.role === 'assistant' ? (m.tool_calls ?? []) : []) {
      if (call.function.name !== 'sql_query') continue;
      try {
        sql.push(String((JSON.parse(call.function.arguments) as { sql?: unknown }).sql ?? ''));
      } catch {
        sql.push('');
      }
    }
  }
  return sql;
}

function hasRecallHead(body: Record<string, unknown> | undefined): boolean {
  const messages = (body?.['messages'] ?? []) as {
    role: string;
    tool_calls?: { function: { name: string } }[];
  }[];
  return messages.some((m) => m.role === 'assistant' && m.tool_calls?.[0]?.function.name === RECALL_TOOL);
}

function toolNames(body: Record<string, unknown> | undefined): string[] {
  const tools = (body?.['tools'] ?? []) as { function?: { name?: string } }[];
  return tools.map((t) => String(t.function?.name ?? '?')).sort();
}

async function runOnce(rig: Rig, mode: NotesMode, run: 1 | 2, tenant: string): Promise<NotesRun> {
  const { ns, client } = rig.modes[mode];
  const from = (await rig.model.requests(Number.MAX_SAFE_INTEGER)).total;
  const emails0 = rig.sink.messages.length;
  const { jobId } = await client.enqueue({ task: REFERENCE_TASK, tenant });
  const result = await client.waitForResult(jobId, {
    timeoutMs: 60_000 * Number(process.env.BENCH_WAIT_SCALE ?? 1),
  });
  const recorded = await rig.model.requests(from);
  if (recorded.failures.length > 0) throw new Error(`scripted model failures: ${recorded.failures[0]}`);
  const [added, finished] = (
    await rig.redis.hmget(`${ns.prefix}:${TASKS_QUEUE}:${jobId}`, 'timestamp', 'finishedOn')
  ).map(Number);
  const server = recorded.usages.reduce<{
    promptTokens: number;
    completionTokens: number;
    cachedPromptTokens: number;
  }>(
    (sum, u) => ({
      promptTokens: sum.promptTokens + (u?.promptTokens ?? 0),
      completionTokens: sum.completionTokens + (u?.completionTokens ?? 0),
      cachedPromptTokens: sum.cachedPromptTokens + (u?.cachedPromptTokens ?? 0),
    }),
    { promptTokens: 0, completionTokens: 0, cachedPromptTokens: 0 },
  );
  return {
    mode,
    run,
    tenant,
    jobId,
    status: `${result.status}/${result.stopReason}`,
    steps: result.steps,
    modelCalls: recorded.bodies.length,
    promptTokens: result.usage.promptTokens,
    completionTokens: result.usage.completionTokens,
    costUsd: result.usage.costUsd,
    server: {
      promptTokens: server.promptTokens,
      completionTokens: server.completionTokens,
      costUsd: costUsd(price, server),
    },
    promptTokensPerCall: recorded.usages.map((u) => u?.promptTokens ?? 0),
    latencyMs: finished! - added!,
    notesUsed: result.notesUsed?.length ?? 0,
    recallAtHead: hasRecallHead(recorded.bodies[0]),
    sumColumns: sqlCalls(recorded.bodies.at(-1)).map(sumColumn),
    emails: rig.sink.messages.length - emails0,
    toolsOffered: toolNames(recorded.bodies[0]),
  };
}

/** What a run should have been: succeeded, three emails, and the queries its mode and run call for. */
function unexpectedOf(run: NotesRun): string | undefined {
  const learned = run.mode === 'on' && run.run === 2;
  const columns = learned ? 'o.total' : 'o.amount,o.total';
  const problems: string[] = [];
  if (run.status !== 'succeeded/answer') problems.push(run.status);
  if (run.emails !== 3) problems.push(`${run.emails} emails`);
  if (run.sumColumns.join(',') !== columns) problems.push(`queries ${run.sumColumns.join(',')}`);
  if (run.recallAtHead !== learned) problems.push(run.recallAtHead ? 'recall at head' : 'no recall at head');
  return problems.length ? `${run.mode} run ${run.run}: ${problems.join(', ')}` : undefined;
}

async function pairOf(rig: Rig, mode: NotesMode, tenant: string): Promise<[NotesRun, NotesRun]> {
  const first = await runOnce(rig, mode, 1, tenant);
  const second = await runOnce(rig, mode, 2, tenant);
  return [first, second];
}

const relative = (a: number, b: number) => (b === 0 ? (a === 0 ? 0 : Infinity) : Math.abs(a - b) / b);

export async function notesMemory(options: {
  repetitions: number;
  latencyMs: number;
  workerNodeArgs: string[];
}): Promise<NotesMemoryResult> {
  const sink = await startSmtpSink();
  const data = await seedPrivateData('notes');
  const model = await startModelServer(options.latencyMs, '', 'reference');
  const redis = new Redis(REDIS_URL);
  const started: { ns: Namespace; client: FleetClient; worker: Child }[] = [];
  try {
    const start = (mode: NotesMode) => {
      const ns = createNamespace(`notes_${mode}`, true);
      const worker = startAgentWorker(ns, model, {
        concurrency: 2,
        nodeArgs: options.workerNodeArgs,
        env: {
          DATA_MYSQL_URL: data.url,
          SMTP_URL: sink.url,
          AGENT_PROTOCOL: 'tools',
          AGENT_NOTES: mode,
        },
      });
      const entry = { ns, client: new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix }), worker };
      started.push(entry);
      return entry;
    };
    const rig: Rig = { model, sink, redis, modes: { off: start('off'), on: start('on') } };
    log('notes: warm-up, the task twice each way');
    await pairOf(rig, 'off', 'warmup');
    await pairOf(rig, 'on', 'warmup');

    const runs: NotesRepetition[] = [];
    for (let rep = 1; rep <= options.repetitions; rep++) {
      const order: NotesMode[] = rep % 2 ? ['off', 'on'] : ['on', 'off'];
      log(`notes: repetition ${rep}, ${order.join(' then ')}, the task twice each`);
      const pairs = {} as Record<NotesMode, [NotesRun, NotesRun]>;
      // A tenant of its own per repetition: the on side's first run finds no note, its second the first's.
      for (const mode of order) pairs[mode] = await pairOf(rig, mode, `rep-${rep}`);
      runs.push({ order, off: pairs.off, on: pairs.on });
    }

    const all = runs.flatMap((r) => [...r.off, ...r.on]);
    const unexpected: Record<string, number> = {};
    for (const run of all) {
      const key = unexpectedOf(run);
      if (key) unexpected[key] = (unexpected[key] ?? 0) + 1;
    }
    const cell = (mode: NotesMode, i: 0 | 1) =>
      Object.fromEntries(FIGURES.map((f) => [f, median(runs.map((r) => r[mode][i][f]))])) as Record<
        Figure,
        number
      >;
    const series = (i: 0 | 1) =>
      Object.fromEntries(FIGURES.map((f) => [f, runs.map((r) => r.on[i][f] / r.off[i][f])])) as Record<
        Figure,
        number[]
      >;
    const ratioSeries = { run1: series(0), run2: series(1) };
    const medianOf = (s: Record<Figure, number[]>) =>
      Object.fromEntries(FIGURES.map((f) => [f, median(s[f])])) as Record<Figure, number>;
    return {
      repetitions: options.repetitions,
      latencyMs: options.latencyMs,
      model: DEFAULT_MODEL,
      medians: {
        off: { run1: cell('off', 0), run2: cell('off', 1) },
        on: { run1: cell('on', 0), run2: cell('on', 1) },
      },
      ratios: { run1: medianOf(ratioSeries.run1), run2: medianOf(ratioSeries.run2) },
      ratioSeries,
      promptTokensPerCall: {
        toolDefinition: median(
          runs.map((r) => r.on[0].promptTokensPerCall[0]! - r.off[0].promptTokensPerCall[0]!),
        ),
        recallHead: median(
          runs.map((r) => r.on[1].promptTokensPerCall[0]! - r.on[0].promptTokensPerCall[0]!),
        ),
        firstCallOff: median(runs.map((r) => r.off[0].promptTokensPerCall[0]!)),
      },
      crossCheck: {
        promptTokens: Math.max(...all.map((r) => relative(r.promptTokens, r.server.promptTokens))),
        completionTokens: Math.max(
          ...all.map((r) => relative(r.completionTokens, r.server.completionTokens)),
        ),
        costUsd: Math.max(...all.map((r) => relative(r.costUsd, r.server.costUsd))),
      },
      unexpected,
      runs,
    };
  } finally {
    await Promise.all(started.map((s) => s.worker.stop(10_000)));
    await model.child.stop();
    await Promise.all(started.map((s) => s.client.close()));
    redis.disconnect();
    await sink.close();
    await data.cleanup();
    await Promise.all(started.map((s) => s.ns.cleanup()));
  }
}
