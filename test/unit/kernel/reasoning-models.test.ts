// Reasoning models (gpt-5 family, o3, o4-mini) through the kernel and the real OpenAI adapter, against the scripted
// server behaving as OpenAI documents them: `max_tokens` and a temperature refused with a 400, the completion limit
// (`max_completion_tokens`) covering reasoning and output together, reasoning tokens reported in the usage details.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import { costUsd } from '../../../src/kernel/pricing.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';
import { runConfigFor } from '../../../src/worker/run-config.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { parseEnv } from '../../../config/env.js';
import { validateTask } from '../../../src/queue/task-schema.js';
import type { ModelPrice } from '../../../src/kernel/pricing.js';
import {
  DEFAULT_COMPLETION_TOKENS,
  DEFAULT_REASONING_COMPLETION_TOKENS,
} from '../../../src/kernel/defaults.js';

let server: ScriptedModelServer;
/** As OpenAI's Chat Completions treats gpt-5.4 and later: function tools only at `reasoning_effort: "none"`. */
let strict: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel({ reasoningModel: true });
  strict = await startScriptedModel({ reasoningModel: true, toolsOnlyWithoutReasoning: true });
});
afterAll(async () => {
  await server.close();
  await strict.close();
});

const modelFor = (name: string, on: ScriptedModelServer = server) =>
  new OpenAIChatModel({ model: name, apiKey: 'test', baseURL: on.baseURL });
/** A reasoning model that takes `none` (gpt-5.1 and later do), priced as o4-mini. */
const takesNone = (): ModelPrice => ({
  ...priceOf('o4-mini'),
  reasoningEfforts: ['none', 'low', 'medium', 'high', 'xhigh'],
});
const script = () => [
  { actions: [{ tool: 'lookup', args: { id: 7 } }], reasoningTokens: 300 },
  { actions: [{ tool: 'add', args: { a: 2, b: 3 } }], reasoningTokens: 120 },
  { answer: 'customer-7; 5', reasoningTokens: 64 },
];

describe('reasoning models', () => {
  it('a request shaped for older models is refused by a reasoning model, naming the parameter', async () => {
    server.reset({ script: script() });
    const { result } = await runWith(server, {
      model: modelFor('o4-mini'),
      price: priceOf('o4-mini'),
      options: { reasoningModel: false, modelRetries: 0 },
    });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('http_400');
    expect(result.error?.message).toContain("'max_tokens' is not supported with this model");
  });

  it('sends max_completion_tokens, no temperature and the reasoning effort; bills reasoning as completion', async () => {
    server.reset({ script: script() });
    const from = server.requests.length;
    const o4mini = priceOf('o4-mini');
    expect(o4mini.reasoning).toBe(true);
    const { result, traces } = await runWith(server, {
      model: modelFor('o4-mini'),
      price: o4mini,
      options: { reasoningEffort: 'low', completionTokens: 2_000 },
    });
    expect(result.status).toBe('succeeded');
    const requests = server.requests.slice(from);
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.body.max_completion_tokens).toBeGreaterThan(0);
      expect(request.body).not.toHaveProperty('max_tokens');
      expect(request.body).not.toHaveProperty('temperature');
      expect(request.body.reasoning_effort).toBe('low');
    }
    expect(result.usage.reasoningTokens).toBe(484);
    const server_ = requests.map((r) => r.usage!);
    expect(result.usage.completionTokens).toBe(server_.reduce((n, u) => n + u.completionTokens, 0));
    expect(result.usage.costUsd).toBeCloseTo(
      server_.reduce((n, u) => n + costUsd(o4mini, u), 0),
      12,
    );
    expect(traces.map((t) => t.reasoningTokens)).toEqual([300, 120, 64]);
  });

  it('reserves reasoning in the completion limit: a tight budget is never exceeded', async () => {
    // Each reply would reason 900 tokens: the limit the budget allows cuts it, and the run stops within budget.
    // A new lookup each step: the compact memory fits more steps in the budget than the repeat detector allows
    // identical ones.
    let id = 0;
    server.reset({
      rules: [() => ({ actions: [{ tool: 'lookup', args: { id: ++id } }], reasoningTokens: 900 })],
    });
    const { result } = await runWith(server, {
      model: modelFor('o4-mini'),
      price: priceOf('o4-mini'),
      options: { completionTokens: 1_000 },
      budget: { maxTokens: 4_000 },
    });
    expect(result.stopReason).toBe('token_budget');
    expect(result.usage.totalTokens).toBeLessThanOrEqual(4_000);
    expect(result.usage.reasoningTokens).toBeGreaterThan(0);
  });

  it("an agent's modelSettings reach the run", () => {
    const env = parseEnv({ LLM_MODEL: 'gpt-5-mini' });
    const agent = defineAgent({
      name: 'thinker',
      description: 'Thinks.',
      tools: [],
      model: 'gpt-5-mini',
      modelSettings: { reasoningEffort: 'high', maxCompletionTokens: 4_000 },
    });
    const checked = validateTask({ agent: 'thinker', task: 'think' });
    if (!checked.ok) throw new Error('task refused');
    const config = runConfigFor(checked.task, env, agent);
    expect(config.options).toMatchObject({ reasoningEffort: 'high', completionTokens: 4_000 });
    expect(config.price.reasoning).toBe(true);
    // LLM_REASONING_EFFORT and LLM_MAX_TOKENS reach agents without settings of their own; the agent's win.
    const plain = defineAgent({ name: 'plain', description: 'x', tools: [], model: 'gpt-5-mini' });
    const plainTask = validateTask({ agent: 'plain', task: 'think' });
    if (!plainTask.ok) throw new Error('task refused');
    const tuned = parseEnv({
      LLM_MODEL: 'gpt-5-mini',
      LLM_REASONING_EFFORT: 'medium',
      LLM_MAX_TOKENS: '2000',
    });
    expect(runConfigFor(plainTask.task, tuned, plain).options).toMatchObject({
      reasoningEffort: 'medium',
      completionTokens: 2_000,
    });
    expect(runConfigFor(checked.task, tuned, agent).options).toMatchObject({
      reasoningEffort: 'high',
      completionTokens: 4_000,
    });
    // Unset: the kernel decides by the model (none where it takes it; 512, or 4,096 when it reasons).
    const auto = runConfigFor(plainTask.task, env, plain).options;
    expect(auto).not.toHaveProperty('reasoningEffort');
    expect(auto).not.toHaveProperty('completionTokens');
    expect(() =>
      defineAgent({
        name: 'bad',
        description: 'x',
        tools: [],
        modelSettings: { reasoningEffort: 'extreme' as 'high' },
      }),
    ).toThrow(/modelSettings\.reasoningEffort must be one of none, minimal, low, medium, high, xhigh, max/);
  });
});

describe('the effort and the completion limit when none is chosen', () => {
  it('a model that takes none is sent none: function tools work where Chat Completions allows them only then', async () => {
    strict.reset({ script: script().map(({ reasoningTokens: _, ...reply }) => reply) });
    const from = strict.requests.length;
    const { result } = await runWith(strict, { model: modelFor('thinker-1', strict), price: takesNone() });
    expect(result.status).toBe('succeeded');
    const requests = strict.requests.slice(from);
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.tools?.length).toBeGreaterThan(0);
      expect(request.body.reasoning_effort).toBe('none');
      // It does not reason, so the limit is the ordinary one.
      expect(request.body.max_completion_tokens).toBe(DEFAULT_COMPLETION_TOKENS);
      expect(request.body).not.toHaveProperty('temperature');
    }
  });

  it('an effort chosen is sent as chosen, with room to reason; the endpoint refusing it is named', async () => {
    strict.reset({ script: script() });
    const from = strict.requests.length;
    const { result } = await runWith(strict, {
      model: modelFor('thinker-1', strict),
      price: takesNone(),
      options: { reasoningEffort: 'low', modelRetries: 0 },
    });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('http_400');
    expect(result.error?.message).toContain("set reasoning_effort to 'none'");
    const [request] = strict.requests.slice(from);
    expect(request!.body.reasoning_effort).toBe('low');
    expect(request!.body.max_completion_tokens).toBe(DEFAULT_REASONING_COMPLETION_TOKENS);
  });

  it('the json protocol carries no function tools, so a chosen effort goes through', async () => {
    strict.reset({ script: script() });
    const from = strict.requests.length;
    const { result } = await runWith(strict, {
      model: modelFor('thinker-1', strict),
      price: takesNone(),
      protocol: 'json',
      options: { reasoningEffort: 'low' },
    });
    expect(result.status).toBe('succeeded');
    for (const request of strict.requests.slice(from)) {
      expect(request.body).not.toHaveProperty('tools');
      expect(request.body.reasoning_effort).toBe('low');
    }
    expect(result.usage.reasoningTokens).toBe(484);
  });

  it('a model without none (o4-mini) gets no effort, its own default, and room to reason', async () => {
    server.reset({ script: script() });
    const from = server.requests.length;
    const { result } = await runWith(server, { model: modelFor('o4-mini'), price: priceOf('o4-mini') });
    expect(result.status).toBe('succeeded');
    for (const request of server.requests.slice(from)) {
      expect(request.body).not.toHaveProperty('reasoning_effort');
      expect(request.body.max_completion_tokens).toBe(DEFAULT_REASONING_COMPLETION_TOKENS);
    }
  });

  it('a configured limit wins over both defaults', async () => {
    server.reset({ script: script() });
    const from = server.requests.length;
    await runWith(server, {
      model: modelFor('o4-mini'),
      price: priceOf('o4-mini'),
      options: { completionTokens: 900 },
    });
    for (const request of server.requests.slice(from)) expect(request.body.max_completion_tokens).toBe(900);
  });
});
