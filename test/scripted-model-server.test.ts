// The scripted model is only useful if the real `openai` client sees it as a provider, so every test goes
// through that client over HTTP rather than calling the server's internals.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage, ToolSpec } from '../src/kernel/messages.js';
import { countCompletionTokens, countPromptTokens, tokenCounterFor } from '../src/kernel/tokens.js';
import { startScriptedModel } from '../src/testing/scripted-model-server.js';
import type { ScriptedModelOptions, ScriptedModelServer } from '../src/testing/scripted-model-server.js';

const MODEL = 'gpt-4o-mini';

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Search the web',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
  },
];

const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You are a careful research agent.' },
  { role: 'user', content: 'What is the capital of France?' },
];

let server: ScriptedModelServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  options: ScriptedModelOptions,
): Promise<{ server: ScriptedModelServer; client: OpenAI }> {
  server = await startScriptedModel(options);
  return { server, client: new OpenAI({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0 }) };
}

function ask(client: OpenAI, extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) {
  return client.chat.completions.create({ model: MODEL, messages: MESSAGES, ...extra });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the request to fail');
}

describe('scripted model server', () => {
  it('plays the script in order and records every request', async () => {
    const { server, client } = await start({
      script: [{ text: 'one' }, { text: 'two' }, { answer: 'three' }],
    });
    const contents = [];
    for (let i = 0; i < 3; i++) contents.push((await ask(client)).choices[0]?.message.content);
    expect(contents).toEqual(['one', 'two', JSON.stringify({ answer: 'three' })]);
    expect(server.requests.map((r) => r.index)).toEqual([0, 1, 2]);
    expect(server.requests[0]?.messages).toEqual(MESSAGES);
    expect(server.requests[0]?.body.model).toBe(MODEL);
    expect(server.failures).toEqual([]);
  });

  it('renders an answer natively with tools and as JSON without', async () => {
    const { server, client } = await start({ script: [{ answer: 'Paris' }, { answer: 'Paris' }] });
    const native = await ask(client, { tools: TOOLS });
    expect(native.choices[0]?.message.content).toBe('Paris');
    expect(native.choices[0]?.finish_reason).toBe('stop');
    const json = await ask(client);
    expect(json.choices[0]?.message.content).toBe('{"answer":"Paris"}');
    expect(json.choices[0]?.finish_reason).toBe('stop');
    expect(server.requests.map((r) => r.protocol)).toEqual(['tools', 'json']);
    expect(server.requests[0]?.tools).toEqual(TOOLS);
    expect(server.requests[1]?.tools).toBeUndefined();
  });

  it('renders one action as a tool call or as JSON', async () => {
    const action = { tool: 'search', args: { query: 'capital of France' } };
    const { client } = await start({
      script: [{ actions: [action] }, { actions: [action] }, { actions: [action], thought: 'Let me look.' }],
    });
    const native = await ask(client, { tools: TOOLS });
    expect(native.choices[0]?.finish_reason).toBe('tool_calls');
    expect(native.choices[0]?.message.content).toBeNull();
    expect(native.choices[0]?.message.tool_calls).toEqual([
      {
        id: 'call_0_0',
        type: 'function',
        function: { name: 'search', arguments: '{"query":"capital of France"}' },
      },
    ]);
    const json = await ask(client);
    expect(json.choices[0]?.message.content).toBe(JSON.stringify(action));
    expect(json.choices[0]?.message.tool_calls).toBeUndefined();
    const withThought = await ask(client);
    expect(withThought.choices[0]?.message.content).toBe(`Let me look.\n${JSON.stringify(action)}`);
  });

  it('renders parallel actions as several tool calls or a `tools` JSON list', async () => {
    const actions = [
      { tool: 'search', args: { query: 'a' } },
      { tool: 'search', args: { query: 'b' } },
    ];
    const { client } = await start({ script: [{ actions, thought: 'Both at once.' }, { actions }] });
    const native = await ask(client, { tools: TOOLS });
    expect(native.choices[0]?.message.content).toBe('Both at once.');
    expect(native.choices[0]?.message.tool_calls?.map((call) => call.id)).toEqual(['call_0_0', 'call_0_1']);
    const calls = native.choices[0]?.message.tool_calls ?? [];
    expect(
      calls.map((call) => (call.type === 'function' ? JSON.parse(call.function.arguments) : null)),
    ).toEqual([{ query: 'a' }, { query: 'b' }]);
    const json = await ask(client);
    expect(JSON.parse(json.choices[0]?.message.content ?? '')).toEqual({ tools: actions });
  });

  it('returns `text` verbatim in both protocols', async () => {
    const text = 'Sure!\n```json\n{"tool": "search", "args": {\n```';
    const { client } = await start({ script: [{ text }, { text }] });
    const native = await ask(client, { tools: TOOLS });
    expect(native.choices[0]?.message.content).toBe(text);
    expect(native.choices[0]?.message.tool_calls).toBeUndefined();
    expect((await ask(client)).choices[0]?.message.content).toBe(text);
  });

  it('consults rules, in order, once the script is used up', async () => {
    const { server, client } = await start({
      script: [{ text: 'scripted' }],
      rules: [
        (request) => (request.protocol === 'tools' ? { answer: 'from tools rule' } : undefined),
        () => ({ text: 'fallback' }),
      ],
    });
    expect((await ask(client, { tools: TOOLS })).choices[0]?.message.content).toBe('scripted');
    expect((await ask(client, { tools: TOOLS })).choices[0]?.message.content).toBe('from tools rule');
    expect((await ask(client)).choices[0]?.message.content).toBe('fallback');
    server.reset({ script: [{ text: 'after reset' }] });
    expect((await ask(client)).choices[0]?.message.content).toBe('after reset');
    expect(server.requests).toHaveLength(4);
  });

  it('reports usage the way the token counter counts it', async () => {
    const { client } = await start({
      script: [
        { actions: [{ tool: 'search', args: { query: 'x' } }], thought: 'Looking it up.' },
        { answer: 'Paris' },
      ],
    });
    const count = tokenCounterFor(MODEL);
    for (const tools of [TOOLS, undefined]) {
      const completion = await ask(client, tools ? { tools } : {});
      const message = completion.choices[0]?.message;
      const toolCalls = message?.tool_calls?.flatMap((call) => (call.type === 'function' ? [call] : []));
      const prompt = countPromptTokens(MESSAGES, tools, count);
      const reply = countCompletionTokens(message?.content ?? null, toolCalls, count);
      expect(completion.usage).toEqual({
        prompt_tokens: prompt,
        completion_tokens: reply,
        total_tokens: prompt + reply,
      });
    }
  });

  it('can count the tool calls of the history as an endpoint does: their JSON, plus framing of its own', async () => {
    const call = {
      id: 'call_7',
      type: 'function' as const,
      function: { name: 'search', arguments: '{"query":"x"}' },
    };
    const history: ChatMessage[] = [
      ...MESSAGES,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_7', content: 'Paris' },
    ];
    const { server, client } = await start({
      script: [{ answer: 'a' }, { answer: 'b' }, { answer: 'c' }],
      promptCounting: { serializedToolCalls: true, extraTokensPerToolCall: 5 },
    });
    const count = tokenCounterFor(MODEL);
    const documented = countPromptTokens(history, TOOLS, count);
    const json = count(JSON.stringify(call)) - count('call_7') - count('search') - count('{"query":"x"}');
    const asked = () =>
      client.chat.completions.create({
        model: MODEL,
        messages: history as OpenAI.Chat.ChatCompletionMessageParam[],
        tools: TOOLS,
      });
    expect((await asked()).usage?.prompt_tokens).toBe(documented + json + 5);
    // A prompt without tool calls is counted as documented.
    expect((await ask(client)).usage?.prompt_tokens).toBe(countPromptTokens(MESSAGES, undefined, count));
    server.reset({ script: [{ answer: 'd' }] });
    expect((await asked()).usage?.prompt_tokens).toBe(documented);
  });

  it('cuts a reply at max_tokens with finish_reason length', async () => {
    const long = 'The capital of France is Paris, which is also its largest city by population. '.repeat(4);
    const { client } = await start({
      script: [{ text: long }, { actions: [{ tool: 'search', args: { query: long } }] }, { text: 'short' }],
    });
    const count = tokenCounterFor(MODEL);

    const text = await ask(client, { max_tokens: 7 });
    expect(text.choices[0]?.finish_reason).toBe('length');
    expect(text.usage?.completion_tokens).toBe(7);
    const cut = text.choices[0]?.message.content ?? '';
    expect(long.startsWith(cut)).toBe(true);
    expect(count(cut)).toBeLessThanOrEqual(7);
    expect(cut.length).toBeGreaterThan(0);

    const native = await ask(client, { tools: TOOLS, max_completion_tokens: 12 });
    expect(native.choices[0]?.finish_reason).toBe('length');
    expect(native.usage?.completion_tokens).toBe(12);
    const call = native.choices[0]?.message.tool_calls?.[0];
    const args = call?.type === 'function' ? call.function.arguments : '';
    expect(JSON.stringify({ query: long }).startsWith(args)).toBe(true);
    expect(() => JSON.parse(args)).toThrow();

    const short = await ask(client, { max_tokens: 7 });
    expect(short.choices[0]?.finish_reason).toBe('stop');
    expect(short.choices[0]?.message.content).toBe('short');
  });

  it('omits usage when the reply says usage: false', async () => {
    const { client } = await start({ script: [{ answer: 'Paris', usage: false }] });
    const completion = await ask(client);
    expect(completion.usage).toBeUndefined();
    expect(completion.choices[0]?.message.content).toBe('{"answer":"Paris"}');
  });

  it('answers a rate_limit fault with 429 and a retry-after header', async () => {
    const { server, client } = await start({ script: [{ fault: 'rate_limit', retryAfterSeconds: 7 }] });
    const error = await rejection(ask(client));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(429);
    expect(apiError.headers?.get('retry-after')).toBe('7');
    expect(apiError.code).toBe('rate_limit_exceeded');
    expect(server.requests).toHaveLength(1);
  });

  it('answers a server_error fault with 500', async () => {
    const { client } = await start({ script: [{ fault: 'server_error' }] });
    const error = await rejection(ask(client));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
  });

  it('rejects a request with the wrong api key with 401', async () => {
    server = await startScriptedModel({ apiKey: 'secret', script: [{ answer: 'ok' }] });
    const wrong = new OpenAI({ apiKey: 'wrong', baseURL: server.baseURL, maxRetries: 0 });
    const error = await rejection(ask(wrong));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(401);
    const right = new OpenAI({ apiKey: 'secret', baseURL: server.baseURL, maxRetries: 0 });
    expect((await ask(right)).choices[0]?.message.content).toBe('{"answer":"ok"}');
  });

  it('hangs until the client times out, then still closes promptly', async () => {
    const { server, client } = await start({ script: [{ fault: 'hang' }, { fault: 'hang' }] });
    const error = await rejection(
      client.chat.completions.create({ model: MODEL, messages: MESSAGES }, { timeout: 200 }),
    );
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    // A second hanging request is still open when the server closes: close() must end it.
    const pending = rejection(ask(client));
    await expect.poll(() => server.requests.length).toBe(2);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await pending).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('makes the client throw on a malformed body', async () => {
    const { client } = await start({ script: [{ fault: 'malformed_body' }] });
    await expect(ask(client)).rejects.toThrow();
  });

  it('writes a structured output as the request asks for it, and records the response format', async () => {
    const output = { city: 'Paris', population: 2_100_000 };
    const { server, client } = await start({ script: [{ output }, { output }, { output }] });
    const format = {
      type: 'json_schema' as const,
      json_schema: { name: 'agent_output', schema: { type: 'object' }, strict: true },
    };
    const native = await ask(client, { tools: TOOLS });
    const json = await ask(client);
    const structured = await ask(client, { response_format: format });
    expect(JSON.parse(native.choices[0]?.message.content ?? '')).toEqual(output);
    expect(JSON.parse(json.choices[0]?.message.content ?? '')).toEqual({ answer: output });
    expect(JSON.parse(structured.choices[0]?.message.content ?? '')).toEqual(output);
    expect(server.requests.map((r) => r.responseFormat)).toEqual([undefined, undefined, format]);
    // The format's schema is prompt too: it is reported in the usage.
    expect(structured.usage?.prompt_tokens).toBeGreaterThan(json.usage?.prompt_tokens ?? Infinity);
  });

  it('refuses response_format with a 400 naming it when told to, using no reply of the script', async () => {
    const { server, client } = await start({ refuseResponseFormat: true, script: [{ answer: 'Paris' }] });
    const error = await rejection(ask(client, { response_format: { type: 'json_object' } }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/'response_format' is not supported/);
    expect((await ask(client)).choices[0]?.message.content).toBe('{"answer":"Paris"}');
    expect(server.requests).toHaveLength(2);
    expect(server.failures).toEqual([]);
  });

  it('fails loudly when a scripted text reply is not the JSON object a response format asks for', async () => {
    const { server, client } = await start({ script: [{ text: 'Paris' }] });
    const error = await rejection(ask(client, { response_format: { type: 'json_object' } }));
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(server.failures).toEqual([
      'scripted model: request #0 asked for a structured reply, but the scripted reply is not a JSON object',
    ]);
  });

  it('fails loudly with 400 when the script is used up', async () => {
    const { server, client } = await start({ script: [{ answer: 'only one' }] });
    await ask(client);
    const error = await rejection(ask(client));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(server.failures).toEqual([
      'scripted model: no reply for request #1 (script of 1 replies used up, no rule matched)',
    ]);
    expect(server.requests).toHaveLength(2);
  });

  it('fails loudly on requests it cannot serve, without recording them', async () => {
    const { server, client } = await start({ script: [{ answer: 'unused' }] });
    const streamed = await rejection(
      client.chat.completions.create({ model: MODEL, messages: MESSAGES, stream: true }),
    );
    expect(streamed).toBeInstanceOf(OpenAI.BadRequestError);
    const noMessages = await rejection(client.post('/chat/completions', { body: { model: MODEL } }));
    expect(noMessages).toBeInstanceOf(OpenAI.BadRequestError);
    const unknownRoute = await rejection(client.models.list());
    expect(unknownRoute).toBeInstanceOf(OpenAI.NotFoundError);
    expect(server.failures).toHaveLength(2);
    expect(server.requests).toHaveLength(0);
    // The script was not consumed by the rejected requests.
    expect((await ask(client)).choices[0]?.message.content).toBe('{"answer":"unused"}');
  });

  it('cuts non-ASCII text to a valid prefix', async () => {
    const text = 'héllo 🎉🎉 wörld 日本語のテキスト '.repeat(5);
    const { client } = await start({ script: [{ text }] });
    const completion = await ask(client, { max_tokens: 9 });
    const cut = completion.choices[0]?.message.content ?? '';
    expect(text.startsWith(cut)).toBe(true);
    expect(tokenCounterFor(MODEL)(cut)).toBeLessThanOrEqual(9);
    expect(completion.usage?.completion_tokens).toBe(9);
  });

  it('drops a delayed reply whose client gave up, and still closes promptly', async () => {
    const { server, client } = await start({ latencyMs: 60_000, script: [{ answer: 'too late' }] });
    const error = await rejection(
      client.chat.completions.create({ model: MODEL, messages: MESSAGES }, { timeout: 100 }),
    );
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('delays replies by the server and reply latency', async () => {
    const { client } = await start({ latencyMs: 100, script: [{ answer: 'slow', latencyMs: 150 }] });
    const started = Date.now();
    await ask(client);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
