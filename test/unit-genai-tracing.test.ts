// The GenAI span mapping on its own (an in-memory exporter, no network): cached and reasoning tokens when the
// usage carries them, a failed model call as an error span, a budget stop that is not an error, and content
// capture that scrubs and bounds what it puts in attributes.
import { SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ModelApiError } from '../src/kernel/errors.js';
import type { ModelCallResult } from '../src/kernel/model-call.js';
import type { AgentResult } from '../src/kernel/types.js';
import { CONTENT_MAX_CHARS } from '../src/telemetry/genai-content.js';
import { GenAiTracing } from '../src/telemetry/genai-tracing.js';

function setUp(captureContent = false) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing = new GenAiTracing(provider.getTracer('test'), { captureContent });
  const run = tracing.startRun({ jobId: '7', agent: 'analyst', model: 'm', attempt: 1, task: 'the task' });
  const spans = () => exporter.getFinishedSpans();
  return { run, spans };
}

const result: AgentResult = {
  jobId: '7',
  status: 'succeeded',
  stopReason: 'answer',
  answer: 'done',
  steps: 1,
  toolCalls: 0,
  usage: { promptTokens: 100, completionTokens: 20, totalTokens: 120, costUsd: 0.0016 },
  error: null,
};

const start = { model: 'm', temperature: 0, messages: [], tools: undefined, purpose: 'step' as const };

describe('GenAI spans', () => {
  it('a call that reports cached and reasoning tokens says so', () => {
    const { run, spans } = setUp();
    const watch = run.modelCall(start)!;
    watch.attempt(1, 256);
    const ended = {
      ok: true,
      completion: {
        message: { role: 'assistant', content: 'done' },
        // The usage fields the endpoint may add (CONTRACT §11), read when present.
        usage: { promptTokens: 100, completionTokens: 20, cachedPromptTokens: 64, reasoningTokens: 8 },
        finishReason: 'stop',
        responseId: 'resp-1',
      },
      // What the call charged: the kernel adds the details up with the rest.
      usage: { promptTokens: 100, completionTokens: 20, cachedPromptTokens: 64, reasoningTokens: 8 },
      attempts: 1,
      latencyMs: 5,
    } as ModelCallResult;
    watch.ended(ended, 0.0016);
    run.end(result);
    const chat = spans().find((s) => s.name === 'chat m')!;
    expect(chat.attributes).toMatchObject({
      'gen_ai.usage.cache_read.input_tokens': 64,
      'gen_ai.usage.reasoning.output_tokens': 8,
      'gen_ai.response.id': 'resp-1',
      'gen_ai.response.model': 'm',
      'gen_ai.request.max_tokens': 256,
    });
    expect(chat.attributes['agent_fleet.usage.estimated']).toBeUndefined();
    expect(chat.parentSpanContext?.spanId).toBe(
      spans()
        .find((s) => s.name === 'invoke_agent analyst')!
        .spanContext().spanId,
    );
  });

  it('a failed call is an error span; a budget stop between retries is not; an unsent call has no span', () => {
    const { run, spans } = setUp();
    const failing = run.modelCall(start)!;
    failing.attempt(1, 100);
    const error = new ModelApiError(
      'http_401',
      'The model endpoint answered 401: bad key sk-abcdefghijklmnopqrstu',
      {
        retryable: false,
        status: 401,
      },
    );
    failing.attemptFailed(1, error);
    failing.ended(
      {
        ok: false,
        stop: 'error',
        error,
        usage: { promptTokens: 0, completionTokens: 0 },
        attempts: 1,
        latencyMs: 1,
      },
      0,
    );
    const stopped = run.modelCall(start)!;
    stopped.attempt(1, 100);
    stopped.ended(
      {
        ok: false,
        stop: 'cost_budget',
        usage: { promptTokens: 0, completionTokens: 0 },
        attempts: 1,
        latencyMs: 1,
      },
      0,
    );
    run.modelCall(start)!.ended(
      {
        ok: false,
        stop: 'token_budget',
        usage: { promptTokens: 0, completionTokens: 0 },
        attempts: 0,
        latencyMs: 0,
      },
      0,
    );
    run.end({
      ...result,
      status: 'failed',
      stopReason: 'error',
      error: { kind: 'model_api', code: 'http_401', message: error.message, retryable: false },
    });
    const chats = spans().filter((s) => s.name === 'chat m');
    expect(chats).toHaveLength(2);
    expect(chats[0]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(chats[0]!.attributes['error.type']).toBe('http_401');
    expect(chats[0]!.status.message).not.toContain('sk-abcdefghijklmnopqrstu');
    expect(chats[1]!.status.code).toBe(SpanStatusCode.UNSET);
    expect(chats[1]!.attributes['agent_fleet.model.stopped']).toBe('cost_budget');
    const agent = spans().find((s) => s.name === 'invoke_agent analyst')!;
    expect(agent.status.code).toBe(SpanStatusCode.ERROR);
    expect(agent.attributes['error.type']).toBe('http_401');
  });

  it('captured tool content is scrubbed and bounded', () => {
    const { run, spans } = setUp(true);
    const tool = run.toolCall({
      name: 'sql_query',
      callId: 'c1',
      step: 1,
      args: { sql: 'SELECT 1', password: 'pw-123456' },
    })!;
    tool.ended({
      ok: true,
      output: `Bearer AbC123dEf456GhI789 ${'x'.repeat(CONTENT_MAX_CHARS * 2)}`,
      attempts: 1,
      latencyMs: 3,
    });
    run.end(result);
    const span = spans().find((s) => s.name === 'execute_tool sql_query')!;
    expect(JSON.parse(String(span.attributes['gen_ai.tool.call.arguments']))).toEqual({
      sql: 'SELECT 1',
      password: '[redacted]',
    });
    const output = String(span.attributes['gen_ai.tool.call.result']);
    expect(output).not.toContain('AbC123dEf456GhI789');
    expect(output.length).toBeLessThanOrEqual(CONTENT_MAX_CHARS + 100);
    const agent = spans().find((s) => s.name === 'invoke_agent analyst')!;
    expect(JSON.parse(String(agent.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'the task' }] },
    ]);
  });
});
