// The kernel alone, in one process: runs of `runAgent` driven by an in-process scripted model (the steps
// model's shape: tool calls with a new `page` until the last step, then the answer), JSON protocol, with a
// checkpoint and a step callback as the worker has them. No queue, no store, no HTTP: what is left is the
// kernel's own CPU per step, the tokenizer calls it makes and the checkpoint bytes it serializes.
//
//   npx tsx bench/kernel-steps.ts                       # 10 in flight, no model latency
//   KERNEL_CONCURRENCY=2000 KERNEL_LATENCY_MS=1000 KERNEL_RUNS=8000 npx tsx bench/kernel-steps.ts
//
// Prints one JSON line. Counts (tokenizer calls, tokenized characters, checkpoint bytes per step) do not move
// with the machine's load; CPU and GC time do.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';
import { z } from 'zod';
import type { ChatCompletion, ChatModel, ChatRequest } from '../src/kernel/chat-model.js';
import { runAgent } from '../src/kernel/run-agent.js';
import { ToolRegistry } from '../src/kernel/tool-registry.js';
import { defineTool } from '../src/kernel/tool.js';
import { priceOf } from '../src/llm/price-table.js';

const RUNS = Number(process.env.KERNEL_RUNS ?? 3000);
const WARMUP = Number(process.env.KERNEL_WARMUP ?? Math.min(1000, RUNS));
const CONCURRENCY = Number(process.env.KERNEL_CONCURRENCY ?? 10);
const LATENCY_MS = Number(process.env.KERNEL_LATENCY_MS ?? 0);
const STEPS = Number(process.env.KERNEL_STEPS ?? 6);
const MODEL = process.env.KERNEL_MODEL ?? 'gpt-4-turbo-preview';
const PROTOCOL = process.env.KERNEL_PROTOCOL === 'tools' ? 'tools' : 'json';

// Every call of the tokenizer the kernel makes, counted (the kernel loads the same CommonJS module).
const tokenizerCalls = { calls: 0, chars: 0 };
for (const encoding of ['cl100k_base', 'o200k_base']) {
  const module = createRequire(import.meta.url)(`gpt-tokenizer/encoding/${encoding}`) as {
    countTokens: (text: string) => number;
  };
  const countTokens = module.countTokens;
  module.countTokens = (text: string) => {
    tokenizerCalls.calls++;
    tokenizerCalls.chars += text.length;
    return countTokens(text);
  };
}

const gc = { count: 0, ms: 0, major: 0 };
// Kept referenced: an observer nothing refers to is collected, and reports nothing after that.
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count++;
    gc.ms += entry.duration;
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
    if (kind === 4 || kind === 2) gc.major++; // major or incremental marking
  }
});
gcObserver.observe({ entryTypes: ['gc'] });

const tool = (name: string, description: string, parameters: z.ZodObject) =>
  defineTool({ name, description, parameters, readOnly: true, execute: async () => 'unused' });
const tools = new ToolRegistry([
  tool('sql_query', 'Run one read-only SQL query on the data database.', z.object({ sql: z.string() })),
  tool('list_tables', 'List the tables of the data database.', z.object({})),
  tool('describe_table', 'Describe the columns of a table.', z.object({ table: z.string() })),
  tool('send_email', 'Send an email.', z.object({ to: z.string(), subject: z.string(), body: z.string() })),
]);

/** The steps model: the page it asks for next is its count of the run's calls so far (one run at a time). */
class StepsModel implements ChatModel {
  readonly model = MODEL;
  private readonly pages = new Map<string, number>();
  async complete(request: ChatRequest): Promise<ChatCompletion> {
    if (LATENCY_MS > 0) await new Promise((resolve) => setTimeout(resolve, LATENCY_MS));
    const task = request.messages[1]?.content ?? '';
    const page = (this.pages.get(task) ?? 0) + 1;
    const done = page >= STEPS;
    if (done) this.pages.delete(task);
    else this.pages.set(task, page);
    const usage = { promptTokens: 200, completionTokens: 20 };
    if (done)
      return {
        message: {
          role: 'assistant',
          content: PROTOCOL === 'json' ? `{"answer": "${task} done"}` : `${task} done`,
        },
        usage,
        finishReason: 'stop',
      };
    const args = JSON.stringify({ page });
    return {
      message:
        PROTOCOL === 'json'
          ? { role: 'assistant', content: `{"tool": "bench_lookup", "args": ${args}}` }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: `c${page}`, type: 'function', function: { name: 'bench_lookup', arguments: args } },
              ],
            },
      usage,
      finishReason: PROTOCOL === 'json' ? 'stop' : 'tool_calls',
    };
  }
}

const model = new StepsModel();
const price = priceOf(MODEL);
const totals = { steps: 0, checkpoints: 0, checkpointBytes: 0, failed: 0 };

async function oneRun(i: number): Promise<void> {
  const result = await runAgent({
    runId: `run-${i}`,
    task: `bench k${i}: ${STEPS} steps`,
    model,
    price,
    tools,
    protocol: PROTOCOL,
    budget: { maxSteps: STEPS + 2, maxTokens: 1_000_000, maxCostUsd: 1, deadlineMs: 600_000 },
    onStep: () => undefined,
    onCheckpoint: (checkpoint) => {
      totals.checkpoints++;
      totals.checkpointBytes += checkpoint.json.length;
    },
  });
  totals.steps += result.steps;
  if (result.status !== 'succeeded' || result.steps !== STEPS) totals.failed++;
}

async function batch(from: number, count: number): Promise<void> {
  let next = from;
  const end = from + count;
  const lane = async () => {
    while (next < end) await oneRun(next++);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, lane));
}

await batch(0, WARMUP);
const snapshot = () => ({
  ...totals,
  ...tokenizerCalls,
  gcCount: gc.count,
  gcMs: gc.ms,
  gcMajor: gc.major,
});
// KERNEL_ALLOCATIONS=<file>: a sampling profile of every allocation of the measured window, collected or not.
const allocations = process.env.KERNEL_ALLOCATIONS ? new Session() : null;
if (allocations) {
  allocations.connect();
  await allocations.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    // KERNEL_ALLOCATIONS_LIVE=1: only what is alive at KERNEL_LIVE_AT_MS into the window (what runs in flight hold).
    includeObjectsCollectedByMajorGC: process.env.KERNEL_ALLOCATIONS_LIVE !== '1',
    includeObjectsCollectedByMinorGC: process.env.KERNEL_ALLOCATIONS_LIVE !== '1',
  });
}
// Live objects are read in the middle of the window, with every run still in flight.
const live = allocations && process.env.KERNEL_ALLOCATIONS_LIVE === '1';
const liveRead = live
  ? new Promise<void>((resolve) =>
      setTimeout(
        () => {
          void stopAllocations().then(resolve);
        },
        Number(process.env.KERNEL_LIVE_AT_MS ?? 5_000),
      ),
    )
  : null;
async function stopAllocations(): Promise<void> {
  const { profile } = await allocations!.post('HeapProfiler.stopSampling');
  writeFileSync(process.env.KERNEL_ALLOCATIONS!, JSON.stringify(profile));
}
const before = snapshot();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await batch(WARMUP, RUNS);
const elapsedMs = performance.now() - t0;
await new Promise((resolve) => setTimeout(resolve, 50)); // the last GC entries are delivered
const cpu = process.cpuUsage(cpu0);
gcObserver.disconnect();
if (liveRead) await liveRead;
else if (allocations) await stopAllocations();
const after = snapshot();
const steps = after.steps - before.steps;
const per = (key: keyof typeof before) => Number(((after[key] - before[key]) / steps).toFixed(3));
console.log(
  JSON.stringify({
    runs: RUNS,
    concurrency: CONCURRENCY,
    latencyMs: LATENCY_MS,
    protocol: PROTOCOL,
    steps,
    failed: after.failed - before.failed,
    cpuMsPerStep: Number(((cpu.user + cpu.system) / 1000 / steps).toFixed(4)),
    elapsedMs: Math.round(elapsedMs),
    tokenizerCallsPerStep: per('calls'),
    tokenizedCharsPerStep: per('chars'),
    checkpointsPerStep: per('checkpoints'),
    checkpointBytesPerStep: per('checkpointBytes'),
    gcPerStep: per('gcCount'),
    gcMsPerStep: per('gcMs'),
    gcMajor: after.gcMajor - before.gcMajor,
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1e6),
  }),
);
