// Scenario 6: what runs cost. Three tasks (the benchmark's 6-step task, the reference task, the issue's
// 20-call task), each run by the kernel and by a bare `openai` loop making the same calls with the same tools,
// against the scripted server emulating the provider's prompt caching (prompt-cache-emulator.ts). Tokens are
// the server's own accounting; dollars at gpt-4.1 prices with cached input. The cache is emptied before each
// run, so every run is measured alone, from a cold cache.
import { runAgent, type AgentRunOptions } from '../../src/kernel/run-agent.js';
import { toolsProtocol } from '../../src/kernel/protocol-tools.js';
import { REFERENCE_TASK, referenceModelRules } from '../../src/demo/reference-model.js';
import { OpenAIChatModel } from '../../src/llm/openai-chat-model.js';
import type { ModelPrice } from '../../src/kernel/pricing.js';
import { startScriptedModel, type RecordedRequest } from '../../src/testing/scripted-model-server.js';
import { bareOpenAiLoop } from '../lib/bare-openai-loop.js';
import { people, startCostWorld, type CostWorld } from '../lib/cost-fixture.js';
import { log } from '../lib/fleet.js';
import { benchStepsModel, taskText } from '../lib/steps-model.js';
import { ROSTER_TASK, rosterReply, rosterSolved } from '../lib/roster-model.js';

/** gpt-4.1, USD per million tokens: input, cached input, output (OpenAI's price list). */
export const COST_PRICES = { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 };
const MODEL = 'gpt-4.1';
const SIX_STEP_TASK = taskText('cost', 6);

export interface Bill {
  calls: number;
  promptTokens: number;
  cachedPromptTokens: number;
  completionTokens: number;
  costUsd: number;
  solved: boolean;
}

export interface CostTaskResult {
  task: string;
  runs: { bare: Bill; kernel: Bill; window6: Bill }[];
  /** The first run's figures (every run is the same deterministic trajectory; the runs check it). */
  bare: Bill;
  kernel: Bill;
  window6: Bill;
  promptRatio: number;
  costRatio: number;
  solvedEveryRun: { bare: boolean; kernel: boolean; window6: boolean };
}

export interface CostResult {
  prices: typeof COST_PRICES;
  model: string;
  tasks: CostTaskResult[];
}

function billOf(requests: readonly RecordedRequest[], solved: boolean): Bill {
  let prompt = 0;
  let cached = 0;
  let completion = 0;
  for (const r of requests) {
    prompt += r.usage?.promptTokens ?? 0;
    cached += r.usage?.cachedPromptTokens ?? 0;
    completion += r.usage?.completionTokens ?? 0;
  }
  const costUsd =
    ((prompt - cached) * COST_PRICES.inputPerMillion +
      cached * COST_PRICES.cachedInputPerMillion +
      completion * COST_PRICES.outputPerMillion) /
    1_000_000;
  return {
    calls: requests.length,
    promptTokens: prompt,
    cachedPromptTokens: cached,
    completionTokens: completion,
    costUsd,
    solved,
  };
}

interface TaskSpec {
  name: string;
  task: string;
  solved: (answer: string | null, world: CostWorld) => boolean;
}

const TASKS: TaskSpec[] = [
  {
    name: '6-step benchmark task',
    task: SIX_STEP_TASK,
    solved: (answer) => answer === 'cost done in 6 steps',
  },
  {
    name: 'reference task',
    task: REFERENCE_TASK,
    solved: (answer, world) =>
      /^Top 3 customers by Q1 2024 sales/.test(answer ?? '') &&
      new Set(world.mail.map((m) => m.to)).size === 3,
  },
  {
    name: '20-call task',
    task: ROSTER_TASK,
    solved: (answer, world) => {
      const truth = people();
      const email = world.mail.find((m) => m.to === 'lead@example.com');
      return rosterSolved(answer, truth) && !!email && rosterSolved(email.text, truth);
    },
  },
];

export async function cost(options: { runs: number; database: string }): Promise<CostResult> {
  const world = await startCostWorld(options.database);
  // The 6-step task as `BENCH_TOOL=list_tables` runs it: every step a real tool on the data database.
  const steps = benchStepsModel('list_tables');
  const server = await startScriptedModel({
    promptCache: true,
    rules: [
      (request) => {
        const task = String(request.messages[1]?.content ?? '');
        if (task === ROSTER_TASK) return rosterReply(request);
        if (task === SIX_STEP_TASK) return steps(request);
        return referenceModelRules[0]!(request);
      },
    ],
  });
  const price: ModelPrice = COST_PRICES;
  const model = new OpenAIChatModel({ model: MODEL, baseURL: server.baseURL, apiKey: 'bench' });
  const budget = { maxSteps: 25, maxTokens: 400_000, maxCostUsd: 2, deadlineMs: 120_000 };
  let runId = 0;

  async function measured(task: TaskSpec, run: () => Promise<string | null>): Promise<Bill> {
    server.promptCache?.clear();
    world.resetMail();
    const from = server.requests.length;
    const answer = await run();
    if (server.failures.length > 0) throw new Error(`scripted model: ${server.failures.join('; ')}`);
    if (process.env.BENCH_COST_TRACE)
      log(
        server.requests
          .slice(from)
          .map((r) => `${r.usage?.promptTokens}/${r.usage?.cachedPromptTokens}`)
          .join(' '),
      );
    return billOf(server.requests.slice(from), task.solved(answer, world));
  }
  const kernel = (task: TaskSpec, memory: AgentRunOptions['memoryWindow']) => async () =>
    (
      await runAgent({
        runId: `cost-${++runId}`,
        task: task.task,
        model,
        price,
        tools: world.tools,
        budget,
        protocol: 'tools',
        options: { memoryWindow: memory },
      })
    ).answer;
  const bare = (task: TaskSpec) => async () =>
    (
      await bareOpenAiLoop({
        baseURL: server.baseURL,
        model: MODEL,
        system: toolsProtocol.systemPrompt(world.tools),
        task: task.task,
        tools: world.tools,
        maxCalls: budget.maxSteps,
        maxTokens: 512,
        temperature: 0.2,
      })
    ).answer;

  try {
    const tasks: CostTaskResult[] = [];
    for (const task of TASKS) {
      const runs: CostTaskResult['runs'] = [];
      for (let i = 0; i < options.runs; i++) {
        log(`cost: ${task.name}, run ${i + 1} of ${options.runs}`);
        runs.push({
          bare: await measured(task, bare(task)),
          kernel: await measured(task, kernel(task, 'auto')),
          window6: await measured(task, kernel(task, 6)),
        });
      }
      const first = runs[0]!;
      tasks.push({
        task: task.name,
        runs,
        bare: first.bare,
        kernel: first.kernel,
        window6: first.window6,
        promptRatio: first.kernel.promptTokens / first.bare.promptTokens,
        costRatio: first.kernel.costUsd / first.bare.costUsd,
        solvedEveryRun: {
          bare: runs.every((r) => r.bare.solved),
          kernel: runs.every((r) => r.kernel.solved),
          window6: runs.every((r) => r.window6.solved),
        },
      });
    }
    return { prices: COST_PRICES, model: MODEL, tasks };
  } finally {
    await server.close();
    await world.close();
  }
}
