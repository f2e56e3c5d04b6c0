// The Responses API through the kernel and the real `openai` client, against the scripted server behaving as
// OpenAI's `/v1/responses` does: it refuses Chat-only parameters, a temperature on a reasoning model, an output
// without its call, a call sent back without the reasoning item it came with, and (with `store: false`) a reasoning
// item without its encrypted content. The transcript properties of the Chat Completions runs hold here too, read
// off the input items; and every reasoning item goes back with its calls, through a resume.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunState } from '../../../src/kernel/types.js';
import { OpenAIResponsesModel } from '../../../src/llm/openai-responses-model.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { costUsd } from '../../../src/kernel/pricing.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { parseEnv } from '../../../config/env.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import { SUMMARY_HEADING } from '../../../src/kernel/memory.js';
import { viewOfResponsesRequest } from '../../../src/testing/scripted-responses.js';
import { validateTask } from '../../../src/queue/task-schema.js';
import { modelFactoryFrom } from '../../../src/worker/model-factory.js';
import { runConfigFor } from '../../../src/worker/run-config.js';
import { runWith } from '../../support/kernel-harness.js';
import { expectNativeTranscript, turnSentBack } from '../../support/native-transcript.js';
import { expectResponsesTranscript } from '../../support/responses-transcript.js';

const MODEL = 'gpt-5.4-mini';
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel({ reasoningModel: true, promptCache: true });
});
afterAll(() => server.close());

const responses = (on: ScriptedModelServer = server) =>
  new OpenAIResponsesModel({ model: MODEL, apiKey: 'test', baseURL: on.baseURL });

/** A run of the default model over the Responses API, reasoning at `low` so that it returns reasoning items. */
function run(overrides: Parameters<typeof runWith>[1] = {}) {
  return runWith(server, {
    model: responses(),
    price: priceOf(MODEL),
    ...overrides,
    options: { reasoningEffort: 'low', ...overrides.options },
  });
}

async function recorded(go: () => Promise<unknown>): Promise<RecordedRequest[]> {
  const before = server.requests.length;
  await go();
  return server.requests.slice(before);
}

const chatModel = () => new OpenAIChatModel({ model: MODEL, apiKey: 'test', baseURL: server.baseURL });

/** The checkpoint of a run over `model` stopped after its first step. */
async function checkpointAfterOneStep(model: OpenAIChatModel | OpenAIResponsesModel): Promise<RunState> {
  const stop = new AbortController();
  let saved: RunState | undefined;
  await runWith(server, {
    model,
    price: priceOf(MODEL),
    signal: stop.signal,
    onStep: () => stop.abort(),
    onCheckpoint: (checkpoint) => {
      saved = JSON.parse(checkpoint.json) as RunState;
    },
    options: { reasoningEffort: 'low' },
  });
  return saved!;
}

const lookupThenAdd = (): ScriptedReply[] => [
  { actions: [{ tool: 'lookup', args: { id: 7 }, argumentsText: '{ "id" : 7 }' }], reasoningTokens: 200 },
  { actions: [{ tool: 'add', args: { a: 2, b: 3 } }], reasoningTokens: 90 },
  { answer: 'customer-7, and 5', reasoningTokens: 40 },
];

describe('a run over the Responses API', () => {
  it('sends instructions, input items, max_output_tokens, reasoning.effort, store false and the encrypted reasoning', async () => {
    server.reset({ script: lookupThenAdd() });
    const requests = await recorded(() => run());
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.url).toBe('/v1/responses');
      expect(request.body).toMatchObject({
        model: MODEL,
        max_output_tokens: 4096,
        reasoning: { effort: 'low' },
        store: false,
        include: ['reasoning.encrypted_content'],
        parallel_tool_calls: true,
      });
      expect(request.body.instructions).toEqual(expect.stringMatching(/tool/));
      expect(request.body).not.toHaveProperty('temperature');
      expect(request.body.tools[0]).toMatchObject({ type: 'function', name: 'lookup', strict: false });
    }
    expect(requests[0]!.body.input).toEqual([{ type: 'message', role: 'user', content: expect.any(String) }]);
    // The second request: the task, then the reasoning item and the call it came with, then the call's output.
    const second = requests[1]!.body.input as Record<string, unknown>[];
    expect(second.map((item) => item.type)).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
    expect(second[1]).toMatchObject({ id: `rs_scripted_${requests[0]!.index}` });
    expect(second[1]!.encrypted_content).toMatch(/^enc_/);
    expect(second[2]).toMatchObject({ arguments: '{ "id" : 7 }', call_id: `call_${requests[0]!.index}_0` });
    expect(second[3]).toMatchObject({ call_id: `call_${requests[0]!.index}_0` });
    expect(String(second[3]!.output)).toContain('customer-7');
    expectResponsesTranscript(requests);
    expectNativeTranscript(requests, { toolOutputs: ['customer-7', 'c7@example.com'] });
    expect(turnSentBack(requests, 0).tool_calls?.[0]?.function.arguments).toBe('{ "id" : 7 }');
  });

  it("bills what the server counted: input, cached input, output and reasoning tokens, at the model's prices", async () => {
    server.reset({ script: lookupThenAdd().map((reply, i) => ({ ...reply, cachedTokens: i * 128 })) });
    let usage: Awaited<ReturnType<typeof run>>['result']['usage'] | undefined;
    const requests = await recorded(async () => {
      usage = (await run()).result.usage;
    });
    const counted = requests.map((r) => r.usage!);
    const sum = (pick: (u: (typeof counted)[number]) => number | undefined) =>
      counted.reduce((total, u) => total + (pick(u) ?? 0), 0);
    expect(usage).toMatchObject({
      promptTokens: sum((u) => u.promptTokens),
      completionTokens: sum((u) => u.completionTokens),
      cachedPromptTokens: sum((u) => u.cachedPromptTokens),
      reasoningTokens: 330,
    });
    expect(sum((u) => u.cachedPromptTokens)).toBe(384);
    expect(usage!.costUsd).toBeCloseTo(
      costUsd(priceOf(MODEL), {
        promptTokens: usage!.promptTokens,
        completionTokens: usage!.completionTokens,
        cachedPromptTokens: usage!.cachedPromptTokens ?? 0,
      }),
      12,
    );
  });

  it('parallel calls: the reasoning item, then every call, then one output per call, in order', async () => {
    server.reset({
      script: [
        {
          thought: 'Looking the three up together.',
          actions: [1, 2, 3].map((id) => ({ tool: 'lookup', args: { id } })),
          reasoningTokens: 50,
        },
        { answer: 'three customers' },
      ],
    });
    const requests = await recorded(() => run());
    expectResponsesTranscript(requests);
    expectNativeTranscript(requests, { toolOutputs: ['customer-1', 'customer-2', 'customer-3'] });
    const input = requests[1]!.body.input as Record<string, unknown>[];
    expect(input.map((item) => item.type)).toEqual([
      'message',
      'reasoning',
      'message',
      'function_call',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'function_call_output',
    ]);
    expect(turnSentBack(requests, 0).content).toBe('Looking the three up together.');
  });

  it('failed calls and their correction go back as they were, each error in its output item', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'nope', args: {} }] },
        { actions: [{ tool: 'lookup', args: {}, argumentsText: '{"id": 7' }] },
        { actions: [{ tool: 'lookup', args: { id: 7 } }] },
        { answer: 'customer-7' },
      ],
    });
    const { result } = await run();
    const requests = server.requests.slice(-4);
    expect(result.status).toBe('succeeded');
    expectResponsesTranscript(requests);
    expectNativeTranscript(requests, { toolOutputs: ['customer-7'] });
    const outputs = (requests[3]!.body.input as Record<string, unknown>[])
      .filter((item) => item.type === 'function_call_output')
      .map((item) => String(item.output));
    expect(outputs[0]).toMatch(/Unknown tool "nope"/);
    expect(outputs[1]).toMatch(/arguments/i);
  });

  it('the final turn at a budget stop keeps the transcript, reasoning included, and asks for the answer', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 7 } }], reasoningTokens: 30 },
        { answer: 'customer-7' },
      ],
    });
    const requests = await recorded(() => run({ budget: { maxSteps: 2 } }));
    expect(requests).toHaveLength(2);
    expectResponsesTranscript(requests);
    expectNativeTranscript(requests, { toolOutputs: ['customer-7'] });
    expect(requests[1]!.body).not.toHaveProperty('tools');
    const input = requests[1]!.body.input as Record<string, unknown>[];
    expect(input.map((item) => item.type)).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
      'message',
    ]);
    expect(input.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringMatching(/No more tool calls/),
    });
  });

  it('clearing at the context limit keeps every call with its reasoning and answers each', async () => {
    const plan = Array.from({ length: 7 }, (_, i) =>
      i % 2 === 0
        ? { actions: [{ tool: 'big', args: {} }], reasoningTokens: 20 }
        : { actions: [{ tool: 'add', args: { a: i, b: i } }], reasoningTokens: 20 },
    );
    server.reset({ script: [...plan, { answer: 'done' }] });
    let traces: Awaited<ReturnType<typeof runWith>>['traces'] = [];
    let status = '';
    const requests = await recorded(async () => {
      const done = await run({
        budget: { maxCostUsd: 1, maxSteps: 10 },
        options: { contextTokens: 2_500, toolResultMaxTokens: 400, completionTokens: 256 },
      });
      traces = done.traces;
      status = done.result.status;
    });
    expect(status).toBe('succeeded');
    const cutAt = new Set(
      traces.filter((t) => t.events?.some((e) => e.type === 'clear')).map((t) => t.step - 1),
    );
    expect(cutAt.size).toBeGreaterThan(0);
    expectResponsesTranscript(requests, { clearedAt: cutAt });
    expectNativeTranscript(requests, { clearedAt: cutAt, toolOutputs: ['row row row'] });
  });

  it('a resumed run sends back every reasoning item it had before the stop, with its calls', async () => {
    server.reset({ script: lookupThenAdd() });
    const stop = new AbortController();
    let saved: RunState | undefined;
    const first = await recorded(() =>
      run({
        signal: stop.signal,
        onStep: () => stop.abort(),
        onCheckpoint: (checkpoint) => {
          saved = JSON.parse(checkpoint.json) as RunState;
        },
      }),
    );
    expect(first).toHaveLength(1);
    const second = await recorded(() => run({ checkpoint: saved }));
    expect(second).toHaveLength(2);
    expectResponsesTranscript([...first, ...second]);
    expectNativeTranscript([...first, ...second], { toolOutputs: ['customer-7'] });
    expect(server.failures).toEqual([]);
  });

  it('a Responses checkpoint resumed over Chat Completions sends each turn as its assistant message, no items', async () => {
    server.reset({ script: lookupThenAdd() });
    const saved = await checkpointAfterOneStep(responses());
    const resumed = await recorded(() =>
      runWith(server, {
        model: chatModel(),
        price: priceOf(MODEL),
        checkpoint: saved,
        options: { reasoningEffort: 'low' },
      }),
    );
    expect(resumed[0]!.api).toBe('chat');
    const messages = resumed[0]!.body.messages as Record<string, unknown>[];
    const turn = messages.find((m) => m.role === 'assistant')!;
    expect(Object.keys(turn).sort()).toEqual(['content', 'role', 'tool_calls']);
    expect(turn.tool_calls).toEqual([
      { id: expect.any(String), type: 'function', function: { name: 'lookup', arguments: '{ "id" : 7 }' } },
    ]);
    expect(server.failures).toEqual([]);
  });

  it('a Chat Completions checkpoint resumed over Responses sends its turns as the equivalent items', async () => {
    server.reset({ script: lookupThenAdd() });
    const saved = await checkpointAfterOneStep(chatModel());
    const resumed = await recorded(() => run({ checkpoint: saved }));
    expect(resumed).toHaveLength(2);
    const input = resumed[0]!.body.input as Record<string, unknown>[];
    expect(input.slice(1)).toEqual([
      { type: 'function_call', call_id: expect.any(String), name: 'lookup', arguments: '{ "id" : 7 }' },
      {
        type: 'function_call_output',
        call_id: input[1]!.call_id,
        output: expect.stringContaining('customer-7'),
      },
    ]);
    expectResponsesTranscript(resumed);
    expect(server.failures).toEqual([]);
  });

  it("a checkpoint resumed on another model sends the earlier turns without the first model's reasoning", async () => {
    server.reset({ script: lookupThenAdd() });
    const saved = await checkpointAfterOneStep(responses());
    const resumed = await recorded(async () => {
      const { result } = await run({
        model: new OpenAIResponsesModel({ model: 'gpt-5.4', apiKey: 'test', baseURL: server.baseURL }),
        price: priceOf('gpt-5.4'),
        checkpoint: saved,
      });
      expect(result.status).toBe('succeeded');
    });
    expect(server.failures).toEqual([]);
    const input = resumed[0]!.body.input as Record<string, unknown>[];
    expect(input.slice(1)).toEqual([
      { type: 'function_call', call_id: expect.any(String), name: 'lookup', arguments: '{ "id" : 7 }' },
      {
        type: 'function_call_output',
        call_id: input[1]!.call_id,
        output: expect.stringContaining('customer-7'),
      },
    ]);
    // The new model's own turns go back with their reasoning.
    const last = resumed.at(-1)!.body.input as Record<string, unknown>[];
    expect(last.filter((item) => item.type === 'reasoning')).toHaveLength(1);
  });

  it('the numbered window: the summary is its own assistant turn, each kept call with its reasoning', async () => {
    server.reset({
      script: [
        ...[1, 2, 3, 4, 5].map((id) => ({
          ...(id % 2 === 0 ? { thought: `Next, customer ${id}.` } : {}),
          actions: [{ tool: 'lookup', args: { id } }],
          reasoningTokens: 20,
        })),
        { answer: 'five customers', reasoningTokens: 5 },
      ],
    });
    const requests = await recorded(async () => {
      const { result } = await run({ options: { memoryWindow: 4 } });
      expect(result.status).toBe('succeeded');
    });
    expect(server.failures).toEqual([]);
    const folded = requests.filter((r) =>
      String(r.messages[2]?.content).startsWith('Summary of my earlier steps:'),
    );
    expect(folded.length).toBeGreaterThan(0);
    for (const request of folded) {
      // Read back from the input items, the summary and the turn after it are two turns, as over Chat.
      expect(request.messages[2]).toEqual({ role: 'assistant', content: expect.any(String) });
      expect(request.messages[3]).toMatchObject({ role: 'assistant', tool_calls: [expect.any(Object)] });
      const input = request.body.input as Record<string, unknown>[];
      expect(input[1]).toMatchObject({ type: 'message', role: 'assistant' });
      expect(input[2]).toMatchObject({ type: 'reasoning', encrypted_content: expect.any(String) });
    }
  });

  it('a reply cut while reasoning goes back without its reasoning item, which nothing followed', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 7 } }], reasoningTokens: 5_000 },
        { actions: [{ tool: 'lookup', args: { id: 7 } }] },
        { answer: 'customer-7' },
      ],
    });
    const requests = await recorded(() => run({ options: { completionTokens: 512 } }));
    expect(requests[0]!.output?.map((item) => item.type)).toEqual(['reasoning']);
    const second = requests[1]!.body.input as Record<string, unknown>[];
    expect(second.some((item) => item.type === 'reasoning')).toBe(false);
    expect(requests.at(-1)?.usage).toBeDefined();
    expect(server.failures).toEqual([]);
  });

  it('the JSON protocol: the text reply goes back as the message it came as, with its reasoning', async () => {
    server.reset({
      script: [
        { actions: [{ tool: 'lookup', args: { id: 7 } }], reasoningTokens: 10 },
        { answer: 'customer-7' },
      ],
    });
    const requests = await recorded(() => run({ protocol: 'json' }));
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body).not.toHaveProperty('tools');
    const input = requests[1]!.body.input as Record<string, unknown>[];
    expect(input.map((item) => item.type)).toEqual(['message', 'reasoning', 'message', 'message']);
    expect(input[2]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text' }] });
    expectResponsesTranscript(requests);
    expectNativeTranscript(requests);
  });

  it("an agent's structured output: the correction turn asks for the schema as text.format, the value validated", async () => {
    const Digest = z.object({ region: z.string(), total: z.number().min(0) });
    server.reset({
      script: [{ output: { region: 'north', total: -1 } }, { output: { region: 'north', total: 5 } }],
    });
    const requests = await recorded(async () => {
      const { result } = await run({ output: Digest });
      expect(result).toMatchObject({ status: 'succeeded', output: { region: 'north', total: 5 } });
    });
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body).not.toHaveProperty('text');
    expect(requests[1]!.body.text).toMatchObject({
      format: { type: 'json_schema', name: 'agent_output', strict: true, schema: expect.any(Object) },
    });
    expect(requests[1]!.responseFormat?.type).toBe('json_schema');
    expectResponsesTranscript(requests);
  });

  it('the flex tier and the prompt cache key go as service_tier and prompt_cache_key; flex is billed as reported', async () => {
    server.reset({ script: [{ answer: 'customer-7' }] });
    const requests = await recorded(async () => {
      const { result } = await run({ options: { serviceTier: 'flex', cacheKey: 'agent-default' } });
      expect(result.usage.flex?.promptTokens).toBe(result.usage.promptTokens);
    });
    expect(requests[0]!.body).toMatchObject({ service_tier: 'flex', prompt_cache_key: 'agent-default' });
  });

  it("flex's 429 Resource Unavailable is retried and not charged, as over Chat Completions", async () => {
    server.reset({ script: [{ fault: 'flex_unavailable' }, { answer: 'customer-7' }] });
    const requests = await recorded(async () => {
      const { result } = await run({ options: { serviceTier: 'flex' } });
      expect(result.status).toBe('succeeded');
    });
    expect(requests).toHaveLength(2);
  });

  it('an error the API returns names the parameter and is not retried', async () => {
    server.reset({ script: lookupThenAdd() });
    const before = server.requests.length;
    const { result } = await runWith(server, {
      model: responses(),
      price: priceOf(MODEL),
      // Shaped as a model that takes a temperature: the reasoning model refuses it.
      options: { reasoningModel: false },
    });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error?.code).toBe('http_400');
    expect(result.error?.message).toContain("'temperature' is not supported with this model");
    expect(server.requests.length - before).toBe(1);
  });
});

describe("the scripted server refuses what OpenAI's Responses API refuses", () => {
  async function post(body: Record<string, unknown>) {
    const response = await fetch(`${server.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, ...body }),
    });
    return {
      status: response.status,
      error: ((await response.json()) as { error?: Record<string, unknown> }).error,
    };
  }
  const user = { type: 'message', role: 'user', content: 'Find customer 7.' };

  it('Chat-only parameters, naming each', async () => {
    for (const [param, value] of [
      ['messages', [{ role: 'user', content: 'hi' }]],
      ['max_tokens', 100],
      ['response_format', { type: 'json_object' }],
      ['reasoning_effort', 'low'],
    ] as const) {
      const { status, error } = await post({ input: [user], [param]: value });
      expect(status, param).toBe(400);
      expect(error).toMatchObject({ param, type: 'invalid_request_error' });
    }
  });

  it('a temperature on a reasoning model; max_output_tokens below 16', async () => {
    expect((await post({ input: [user], temperature: 0.2 })).error).toMatchObject({ param: 'temperature' });
    expect((await post({ input: [user], max_output_tokens: 8 })).error).toMatchObject({
      param: 'max_output_tokens',
    });
  });

  it('an output whose call is not in the input, and a call without its output', async () => {
    const orphan = await post({
      input: [user, { type: 'function_call_output', call_id: 'call_x', output: 'rows' }],
    });
    expect(orphan.status).toBe(400);
    expect(orphan.error?.message).toBe('No tool call found for function call output with call_id call_x.');
    const unanswered = await post({
      input: [user, { type: 'function_call', call_id: 'call_y', name: 'lookup', arguments: '{}' }],
    });
    expect(unanswered.error?.message).toBe('No tool output found for function call call_y.');
  });

  it('a call sent back without its reasoning item; a reasoning item without its encrypted content', async () => {
    server.reset({ script: [{ actions: [{ tool: 'lookup', args: { id: 7 } }], reasoningTokens: 10 }] });
    const first = await fetch(`${server.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        input: [user],
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }],
        store: false,
        include: ['reasoning.encrypted_content'],
        reasoning: { effort: 'low' },
      }),
    });
    const output = ((await first.json()) as { output: Record<string, unknown>[] }).output;
    const [reasoning, call] = output;
    expect(reasoning).toMatchObject({ type: 'reasoning', encrypted_content: expect.any(String) });
    const answer = { type: 'function_call_output', call_id: call!.call_id, output: 'customer-7' };
    const withoutReasoning = await post({ input: [user, call, answer], store: false });
    expect(withoutReasoning.error?.message).toBe(
      `Item '${String(call!.id)}' of type 'function_call' was provided without its required 'reasoning' item: '${String(reasoning!.id)}'.`,
    );
    const { encrypted_content: _dropped, ...bare } = reasoning!;
    const withoutContent = await post({ input: [user, bare, call, answer], store: false });
    expect(withoutContent.status).toBe(404);
    expect(withoutContent.error?.message).toMatch(/Items are not persisted when `store` is set to false/);
    const reasoningAlone = await post({ input: [user, reasoning], store: false });
    expect(reasoningAlone.error?.message).toMatch(/without its required following item/);
    const otherModel = await post({ model: 'gpt-5.4', input: [user, reasoning, call, answer], store: false });
    expect(otherModel.error).toMatchObject({ code: 'invalid_encrypted_content' });
    expect(otherModel.error?.message).toMatch(/could not be decrypted or parsed/);
    expect(server.failures).toEqual([]);
  });
});

describe("the scripted server reads a request's input items as the transcript they stand for", () => {
  const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'lookup', arguments: '{}' });
  const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'row' });
  const said = (text: string) => ({ type: 'message', role: 'assistant', content: text });

  it('parallel calls, text with calls, a JSON-protocol turn, a summary before a turn of calls alone', () => {
    const { messages } = viewOfResponsesRequest({
      instructions: 'Use tools.',
      input: [
        { type: 'message', role: 'user', content: 'Find 1 and 2.' },
        said(`${SUMMARY_HEADING}\n- I called lookup({})`),
        call('c0'),
        output('c0'),
        { type: 'reasoning', id: 'rs_1', summary: [] },
        call('c1'),
        call('c2'),
        output('c1'),
        output('c2'),
        said('Checking 3.'),
        call('c3'),
        output('c3'),
        said('{"tool": "lookup", "args": {}}'),
        { type: 'message', role: 'user', content: 'Result of lookup: row' },
      ],
    });
    expect(
      messages.map((m) => [m.role, m.role === 'assistant' ? (m.tool_calls?.length ?? 0) : null]),
    ).toEqual([
      ['system', null],
      ['user', null],
      ['assistant', 0],
      ['assistant', 1],
      ['tool', null],
      ['assistant', 2],
      ['tool', null],
      ['tool', null],
      ['assistant', 1],
      ['tool', null],
      ['assistant', 0],
      ['user', null],
    ]);
    expect(messages[8]).toMatchObject({ content: 'Checking 3.' });
  });
});

describe('choosing the API', () => {
  const task = (agent: string) => {
    const checked = validateTask({ agent, task: 'think' });
    if (!checked.ok) throw new Error('task refused');
    return checked.task;
  };

  it("LLM_API picks it for every agent, an agent's api wins; a bad value names its field", () => {
    const plain = defineAgent({ name: 'plain', description: 'x', tools: [] });
    const own = defineAgent({ name: 'own', description: 'x', tools: [], api: 'chat' });
    expect(runConfigFor(task('plain'), parseEnv({}), plain).api).toBe('chat');
    const env = parseEnv({ LLM_API: 'responses' });
    expect(runConfigFor(task('plain'), env, plain).api).toBe('responses');
    expect(runConfigFor(task('own'), env, own).api).toBe('chat');
    expect(() => parseEnv({ LLM_API: 'assistants' })).toThrow(/LLM_API/);
    expect(() =>
      defineAgent({ name: 'bad', description: 'x', tools: [], api: 'assistants' as 'chat' }),
    ).toThrow(/agent "bad": api must be one of chat, responses/);
  });

  it('the worker builds one model per model and API, each over its own API', () => {
    const create = modelFactoryFrom(parseEnv({ OPENAI_BASE_URL: server.baseURL }));
    expect(create(MODEL, 'responses')).toBeInstanceOf(OpenAIResponsesModel);
    expect(create(MODEL, 'chat')).toBeInstanceOf(OpenAIChatModel);
    expect(create(MODEL, 'responses')).toBe(create(MODEL, 'responses'));
  });
});
