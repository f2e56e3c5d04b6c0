// What the kernel does, as one digest: 400 scripted runs (both protocols, both memories, two encodings, tight and
// loose budgets, a model stuck repeating itself, bad JSON, long, failing and unknown tools), every request the
// model is sent, every checkpoint, trace and result hashed. For a change meant to keep behaviour (a speed-up):
// the digest before and after must be the same. The clock is fixed, so traces carry no timing.
//
//   npx tsx bench/kernel-digest.ts          # DIGEST_RUNS=400
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ChatCompletion, ChatModel, ChatRequest } from '../src/kernel/chat-model.js';
import { runAgent } from '../src/kernel/run-agent.js';
import { ToolRegistry } from '../src/kernel/tool-registry.js';
import { defineTool } from '../src/kernel/tool.js';
import { priceOf } from '../src/llm/price-table.js';

const RUNS = Number(process.env.DIGEST_RUNS ?? 400);
const hash = createHash('sha256');
const parts: Record<string, ReturnType<typeof createHash>> = {
  requests: createHash('sha256'),
  checkpoints: createHash('sha256'),
  traces: createHash('sha256'),
  results: createHash('sha256'),
};
const feed = (kind: string, text: string) => {
  hash.update(`${kind}:${text}\n`);
  parts[kind]!.update(`${text}\n`);
};

function rng(seed: number) {
  let x = seed * 2654435761 + 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) % 1_000_000) / 1_000_000;
  };
}

const words = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'ORD-1001',
  'ada@example.com',
  '42',
  '3.14',
  'Ω',
  '你好',
  ' ',
  '\n',
];
const text = (r: () => number, n: number) =>
  Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join(r() < 0.5 ? ' ' : '');

const tools = new ToolRegistry([
  defineTool({
    name: 'lookup',
    description: 'Look up a customer by id.',
    parameters: z.object({ id: z.number() }),
    readOnly: true,
    execute: async ({ id }) => ({
      id,
      name: `customer-${id}`,
      rows: Array.from({ length: id % 7 }, (_, i) => i),
    }),
  }),
  defineTool({
    name: 'long',
    description: 'A long text.',
    parameters: z.object({ n: z.number() }),
    readOnly: true,
    execute: async ({ n }) => `row ${n}\n`.repeat(20 + (n % 300)),
  }),
  defineTool({
    name: 'send',
    description: 'Send something.',
    parameters: z.object({ to: z.string(), body: z.string() }),
    execute: async ({ to, body }) => `Sent to ${to} (${body.length} chars)`,
  }),
  defineTool({
    name: 'fail',
    description: 'Always fails.',
    parameters: z.object({}),
    execute: async () => {
      throw new Error('disk on fire');
    },
  }),
]);

class Scripted implements ChatModel {
  readonly model: string;
  constructor(
    model: string,
    private readonly r: () => number,
    private readonly protocol: 'json' | 'tools',
    private readonly stuck = false,
  ) {
    this.model = model;
  }
  private n = 0;
  async complete(request: ChatRequest): Promise<ChatCompletion> {
    feed('requests', JSON.stringify(request));
    const r = this.r;
    this.n++;
    const usage =
      r() < 0.2
        ? null
        : { promptTokens: Math.floor(50 + r() * 3000), completionTokens: Math.floor(r() * 60) };
    const roll = r();
    if (roll < 0.1 || this.n > 14)
      return {
        message: {
          role: 'assistant',
          content: this.protocol === 'json' ? `{"answer": "${text(r, 4)}"}` : text(r, 5),
        },
        usage,
        finishReason: 'stop',
      };
    if (roll < 0.15)
      return {
        message: { role: 'assistant', content: 'not json {' + text(r, 3) },
        usage,
        finishReason: 'stop',
      };
    const calls: { tool: string; args: unknown }[] = [];
    const k = 1 + Math.floor(r() * 3);
    for (let i = 0; i < k; i++) {
      const c = r();
      if (c < 0.35) calls.push({ tool: 'lookup', args: { id: Math.floor(r() * 4) } });
      else if (c < 0.55) calls.push({ tool: 'long', args: { n: Math.floor(r() * 1000) } });
      else if (c < 0.75)
        calls.push({ tool: 'send', args: { body: text(r, 8), to: `u${Math.floor(r() * 3)}@example.com` } });
      else if (c < 0.85) calls.push({ tool: 'fail', args: {} });
      else calls.push({ tool: 'nope', args: { z: 1, a: [2, { y: 1, b: 2 }] } });
    }
    if (this.stuck) calls.splice(0, calls.length, { tool: 'lookup', args: { id: 1 } });
    if (this.protocol === 'json') {
      const content = calls.length === 1 ? JSON.stringify(calls[0]) : JSON.stringify({ tools: calls });
      return {
        message: { role: 'assistant', content: r() < 0.2 ? '```json\n' + content + '\n```' : content },
        usage,
        finishReason: 'stop',
      };
    }
    return {
      message: {
        role: 'assistant',
        content: r() < 0.3 ? text(r, 3) : null,
        tool_calls: calls.map((c, i) => ({
          id: `call_${this.n}_${i}`,
          type: 'function',
          function: { name: c.tool, arguments: JSON.stringify(c.args) },
        })),
      },
      usage,
      finishReason: 'tool_calls',
    };
  }
}

const tally: Record<string, number> = {};
for (let i = 0; i < RUNS; i++) {
  const r = rng(i + 1);
  const protocol = i % 2 === 0 ? 'json' : 'tools';
  const modelName = i % 3 === 0 ? 'gpt-4o' : 'gpt-4-turbo-preview';
  const window = i % 4 === 1 ? 4 : 'auto';
  const tight = i % 5 === 0;
  const result = await runAgent({
    runId: `run-${i}`,
    task: `task ${i}: ${text(r, 6)}`,
    model: new Scripted(modelName, r, protocol, i % 6 === 5),
    price: priceOf(modelName),
    tools,
    protocol,
    options: {
      memoryWindow: window,
      toolResultMaxTokens: 120 + (i % 3) * 200,
      contextTokens: i % 7 === 0 ? 3000 : 128_000,
    },
    budget: {
      maxSteps: 4 + (i % 9),
      maxTokens: tight ? 3000 + (i % 11) * 700 : 200_000,
      maxCostUsd: tight ? 0.02 : 5,
      deadlineMs: 600_000,
    },
    now: () => 1_700_000_000_000,
    onStep: (trace) => feed('traces', JSON.stringify(trace)),
    onCheckpoint: (checkpoint) => feed('checkpoints', checkpoint.json),
  });
  feed('results', JSON.stringify(result));
  const key = `${result.stopReason}${result.error ? ':' + result.error.code : ''}`;
  tally[key] = (tally[key] ?? 0) + 1;
}
console.log(
  JSON.stringify({
    tally,
    all: hash.digest('hex').slice(0, 16),
    ...Object.fromEntries(Object.entries(parts).map(([k, h]) => [k, h.digest('hex').slice(0, 16)])),
  }),
);
