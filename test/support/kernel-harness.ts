// Shared set-up for kernel tests: a scripted model over HTTP, the real OpenAI adapter, and small real tools
// that record every execution, so tests can count model calls and tool calls exactly.
import { z } from 'zod';
import { DEFAULT_MAX_COST_USD, DEFAULT_MAX_TOKENS } from '../../src/kernel/defaults.js';
import type { Budget } from '../../src/kernel/budget.js';
import { TransientToolError } from '../../src/kernel/errors.js';
import { runAgent, type AgentRunInput } from '../../src/kernel/run-agent.js';
import type { AgentResult, RunState, StepTrace } from '../../src/kernel/types.js';
import { OpenAIChatModel } from '../../src/llm/openai-chat-model.js';
import { priceOf } from '../../src/llm/price-table.js';
import { ToolRegistry } from '../../src/kernel/tool-registry.js';
import { defineTool } from '../../src/kernel/tool.js';
import type { ScriptedModelServer } from '../../src/testing/scripted-model-server.js';

export const MODEL = 'gpt-4-turbo-preview';

export interface ToolLog {
  executions: { tool: string; args: unknown; callKey: string }[];
  flaky: { failuresLeft: number };
}

export function testTools(log: ToolLog = { executions: [], flaky: { failuresLeft: 0 } }) {
  const record = (tool: string, args: unknown, callKey: string) =>
    log.executions.push({ tool, args, callKey });
  const registry = new ToolRegistry([
    defineTool({
      name: 'lookup',
      description: 'Look up a customer by id.',
      parameters: z.object({ id: z.number().int() }),
      async execute({ id }, ctx) {
        record('lookup', { id }, ctx.callKey);
        return { id, name: `customer-${id}`, email: `c${id}@example.com` };
      },
    }),
    defineTool({
      name: 'peek',
      description: 'Read a value by key.',
      parameters: z.object({ key: z.string(), ms: z.number().optional() }),
      readOnly: true,
      async execute({ key, ms }, ctx) {
        record('peek', { key }, ctx.callKey);
        if (ms) await new Promise((resolve) => setTimeout(resolve, ms));
        return `value of ${key}`;
      },
    }),
    defineTool({
      name: 'add',
      description: 'Add two numbers.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      async execute({ a, b }, ctx) {
        record('add', { a, b }, ctx.callKey);
        return String(a + b);
      },
    }),
    defineTool({
      name: 'slow',
      description: 'Wait ms milliseconds.',
      parameters: z.object({ ms: z.number() }),
      timeoutMs: 200,
      async execute({ ms }, ctx) {
        record('slow', { ms }, ctx.callKey);
        await new Promise((resolve) => setTimeout(resolve, ms));
        return `waited ${ms}`;
      },
    }),
    defineTool({
      name: 'flaky',
      description: 'Fails transiently a few times, then works.',
      parameters: z.object({}),
      async execute(_args, ctx) {
        record('flaky', {}, ctx.callKey);
        if (log.flaky.failuresLeft > 0) {
          log.flaky.failuresLeft--;
          throw new TransientToolError('connection reset');
        }
        return 'flaky ok';
      },
    }),
    defineTool({
      name: 'broken',
      description: 'Always fails.',
      parameters: z.object({}),
      async execute(_args, ctx) {
        record('broken', {}, ctx.callKey);
        throw new Error('disk on fire');
      },
    }),
    defineTool({
      name: 'big',
      description: 'Returns a very long text.',
      parameters: z.object({}),
      async execute(_args, ctx) {
        record('big', {}, ctx.callKey);
        return 'row '.repeat(5000);
      },
    }),
  ]);
  return { registry, log };
}

export interface RunRecord {
  result: AgentResult;
  traces: StepTrace[];
  checkpoints: RunState[];
  log: ToolLog;
}

export async function runWith(
  server: ScriptedModelServer,
  overrides: Partial<Omit<AgentRunInput, 'budget'>> & { budget?: Partial<Budget>; log?: ToolLog } = {},
): Promise<RunRecord> {
  const { registry, log } = testTools(overrides.log);
  const traces: StepTrace[] = [];
  const checkpoints: RunState[] = [];
  const { budget, log: _log, options, ...rest } = overrides;
  const result = await runAgent({
    runId: 'run-1',
    task: 'Find customer 7 and add 2 and 3.',
    model: new OpenAIChatModel({ model: MODEL, apiKey: 'test', baseURL: server.baseURL }),
    price: priceOf(MODEL),
    tools: registry,
    budget: {
      maxSteps: 8,
      maxTokens: DEFAULT_MAX_TOKENS,
      maxCostUsd: DEFAULT_MAX_COST_USD,
      deadlineMs: 30_000,
      ...budget,
    },
    options: { modelRetryBaseDelayMs: 10, toolRetryBaseDelayMs: 5, ...options },
    onStep: (trace) => {
      traces.push(trace);
    },
    onCheckpoint: (checkpoint) => {
      checkpoints.push(checkpoint.state);
    },
    ...rest,
  });
  return { result, traces, checkpoints, log };
}
