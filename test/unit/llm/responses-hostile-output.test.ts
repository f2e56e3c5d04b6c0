// What an endpoint may send back over the Responses API that OpenAI's would not: calls without an id, a name or
// an argument string, items that are not objects, refusals, failures that quote a key, counts that are not counts.
// Each is bounded and classified (a garbled reply is retried, a refusal is the model's text), never a crash, a
// call nobody can answer, or a bill lower than the provider's.
import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../../src/kernel/chat-model.js';
import { ModelApiError } from '../../../src/kernel/errors.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';
import { OpenAIResponsesModel } from '../../../src/llm/openai-responses-model.js';
import type { Fetch } from '../../../src/llm/node-http-fetch.js';

const answering =
  (body: unknown): Fetch =>
  async () =>
    new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });

const responsesAnswering = (body: unknown) =>
  new OpenAIResponsesModel({
    model: 'gpt-5.4-mini',
    apiKey: 'test',
    baseURL: 'http://endpoint.invalid/v1',
    fetch: answering(body),
  });

const request: ChatRequest = {
  messages: [{ role: 'user', content: 'Find customer 7.' }],
  maxTokens: 256,
  temperature: 0,
  reasoning: { effort: 'low' },
};
const call = () => ({ signal: new AbortController().signal, timeoutMs: 5_000 });
const response = (fields: Record<string, unknown>) => ({
  id: 'resp_1',
  object: 'response',
  status: 'completed',
  model: 'gpt-5.4-mini',
  usage: { input_tokens: 40, output_tokens: 12 },
  ...fields,
});
const text = (...content: Record<string, unknown>[]) => ({
  type: 'message',
  id: 'msg_1',
  role: 'assistant',
  content,
});

async function failure(body: unknown): Promise<ModelApiError> {
  const error: unknown = await responsesAnswering(body)
    .complete(request, call())
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(ModelApiError);
  return error as ModelApiError;
}

describe('a Responses reply the endpoint garbled', () => {
  it('a function_call without its call_id, its name or an argument string is a malformed reply, retried', async () => {
    const calls = [
      { type: 'function_call', id: 'fc_1', name: 'lookup', arguments: '{}' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', arguments: '{}' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: { id: 7 } },
    ];
    for (const item of calls) {
      const error = await failure(response({ output: [item] }));
      expect(error).toMatchObject({ code: 'malformed_response', retryable: true });
    }
  });

  it('an output item or a body that is not an object is a malformed reply, not a crash', async () => {
    for (const body of [response({ output: [null, text({ type: 'output_text', text: 'hi' })] }), null]) {
      const error = await failure(body);
      expect(error, JSON.stringify(body)).toMatchObject({ code: 'malformed_response', retryable: true });
    }
  });

  it('a failed response is retried only when its code says another attempt may pass', async () => {
    const failed = (error: unknown) => failure(response({ status: 'failed', output: [], error }));
    expect(await failed({ code: 'server_error', message: 'try again' })).toMatchObject({ retryable: true });
    expect(await failed({ code: 'rate_limit_exceeded', message: 'slow down' })).toMatchObject({
      retryable: true,
    });
    expect(await failed(null)).toMatchObject({ retryable: true });
    const refused = await failed({ code: 'invalid_prompt', message: 'The prompt was refused.' });
    expect(refused).toMatchObject({ code: 'response_failed', retryable: false });
    expect(refused.message).toContain('invalid_prompt');
  });

  it("a failed response's reason is scrubbed of keys and bounded", async () => {
    const key = 'sk-proj-' + 'a1B2c3D4'.repeat(6);
    const error = await failure(
      response({
        status: 'failed',
        output: [],
        error: { message: `upstream said ${key} ${'x'.repeat(5_000)}` },
      }),
    );
    expect(error).toMatchObject({ code: 'response_failed', retryable: true });
    expect(error.message).not.toContain(key);
    expect(error.message.length).toBeLessThan(700);
  });
});

describe('a Responses reply as the turn the kernel keeps', () => {
  it("a refusal is the model's text, alone or after its output_text", async () => {
    const refusal = { type: 'refusal', refusal: 'I cannot help with that.' };
    const alone = await responsesAnswering(response({ output: [text(refusal)] })).complete(request, call());
    expect(alone.message.content).toBe('I cannot help with that.');
    const mixed = await responsesAnswering(
      response({ output: [text({ type: 'output_text', text: 'Part of it. ' }, refusal)] }),
    ).complete(request, call());
    expect(mixed.message.content).toBe('Part of it. I cannot help with that.');
    expect(mixed.message.items).toEqual([text({ type: 'output_text', text: 'Part of it. ' }, refusal)]);
  });

  it('counts that are not counts are no usage (the run estimates), never zero tokens billed', async () => {
    for (const usage of [
      { input_tokens: -5, output_tokens: 7 },
      { input_tokens: 40, output_tokens: '7' },
      { output_tokens: 7 },
    ]) {
      const done = await responsesAnswering(
        response({ usage, output: [text({ type: 'output_text', text: 'ok' })] }),
      ).complete(request, call());
      expect(done.usage, JSON.stringify(usage)).toBeNull();
    }
    const huge = await responsesAnswering(
      response({
        usage: { input_tokens: 40, output_tokens: 12, input_tokens_details: { cached_tokens: 1e30 } },
        output: [text({ type: 'output_text', text: 'ok' })],
      }),
    ).complete(request, call());
    expect(huge.usage).toEqual({ promptTokens: 40, completionTokens: 12, cachedPromptTokens: 40 });
  });
});

describe('a Chat Completions reply the endpoint garbled', () => {
  it('a tool call without its id is a malformed reply, retried', async () => {
    const chat = new OpenAIChatModel({
      model: 'gpt-4o-mini',
      apiKey: 'test',
      baseURL: 'http://endpoint.invalid/v1',
      fetch: answering({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            finish_reason: 'tool_calls',
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: '{}' } }],
            },
          },
        ],
      }),
    });
    const error: unknown = await chat.complete(request, call()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'malformed_response', retryable: true });
  });
});
