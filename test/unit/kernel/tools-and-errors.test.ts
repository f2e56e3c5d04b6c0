// Tool execution (transient retries, timeouts, result cuts), model API errors (429 with retry-after, 500,
// garbled bodies, no usage) and observers that throw.
import { observationsIn } from '../../../src/testing/transcript.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ToolError } from '../../../src/kernel/errors.js';
import { countCompletionTokens, countPromptTokens, tokenCounterFor } from '../../../src/kernel/tokens.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import { defineTool } from '../../../src/kernel/tool.js';
import { MODEL, runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

// What the model was last told a call returned, as a tool message or as a fact of the auto memory.
const lastObservation = () => String(observationsIn(server.requests.at(-1)?.messages ?? []).at(-1));

describe('tools', () => {
  it('retries a transient failure inside the call before the model sees it', async () => {
    server.reset({ script: [{ actions: [{ tool: 'flaky', args: {} }] }, { answer: 'ok' }] });
    const { result, log } = await runWith(server, { log: { executions: [], flaky: { failuresLeft: 2 } } });
    expect(result.status).toBe('succeeded');
    expect(log.executions.filter((e) => e.tool === 'flaky')).toHaveLength(3);
    expect(lastObservation()).toBe('flaky ok');
  });

  it('a transient failure that outlasts its retries and the rounds after it ends the attempt retryable', async () => {
    server.reset({ script: [{ actions: [{ tool: 'flaky', args: {} }] }, { answer: 'ok' }] });
    const { log, result } = await runWith(server, {
      log: { executions: [], flaky: { failuresLeft: 10 } },
      options: { infraRetries: 1, infraRetryBaseDelayMs: 5 },
    });
    // Three tries inside the call, in each of two rounds; the model never saw the failure.
    expect(log.executions).toHaveLength(6);
    expect(server.requests.at(-1)!.messages.some((m: { role: string }) => m.role === 'tool')).toBe(false);
    expect(result.error).toMatchObject({ code: 'tool_unavailable', retryable: true });
  });

  it('a tool that overruns its time limit is an observation', async () => {
    server.reset({ script: [{ actions: [{ tool: 'slow', args: { ms: 2_000 } }] }, { answer: 'ok' }] });
    const { result } = await runWith(server);
    // The run goes on to the answer (a side-effect tool's timeout also makes its outcome unknown: below).
    expect(result.answer).toBe('ok');
    expect(lastObservation()).toBe('slow timed out after 200 ms.');
  });

  it('cuts a long result to the configured token limit before it enters memory', async () => {
    server.reset({ script: [{ actions: [{ tool: 'big', args: {} }] }, { answer: 'ok' }] });
    await runWith(server, { options: { toolResultMaxTokens: 100 } });
    const observation = lastObservation();
    expect(tokenCounterFor(MODEL)(observation)).toBeLessThanOrEqual(100);
    expect(observation).toMatch(/…\[cut: \d+ of \d+ tokens\]$/);
  });

  it('a side effect whose outcome is unknown is listed in the result, which still says what the model did', async () => {
    const { UncertainOutcome, defineTool } = await import('../../../src/kernel/tool.js');
    const { ToolRegistry } = await import('../../../src/kernel/tool-registry.js');
    const { z } = await import('zod');
    const notify = defineTool({
      name: 'notify',
      description: 'Notify someone.',
      parameters: z.object({}),
      execute: async () =>
        new UncertainOutcome('Delivery uncertain.', { what: 'a note', why: 'lookup down' }),
    });
    server.reset({
      script: [
        {
          actions: [
            { tool: 'notify', args: {} },
            { tool: 'notify', args: {} },
          ],
        },
        { answer: 'done' },
      ],
    });
    const { result, checkpoints } = await runWith(server, { tools: new ToolRegistry([notify]) });
    // The model answered, but an answer that may be missing its effects is not a success.
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', answer: 'done' });
    expect(result.error).toMatchObject({ kind: 'tool', code: 'uncertain_effects', retryable: false });
    expect(result.error?.message).toMatch(/outcome of 2 side effect\(s\) is unknown: a note \(lookup down\)/);
    expect(result.uncertainEffects).toEqual([
      { tool: 'notify', callKey: 'run-1:1:1', what: 'a note', why: 'lookup down' },
      { tool: 'notify', callKey: 'run-1:1:2', what: 'a note', why: 'lookup down' },
    ]);
    // Kept in the state, so a resumed run's result lists them too.
    expect(checkpoints.at(-1)?.uncertainEffects).toHaveLength(2);
    expect(lastObservation()).toBe('Delivery uncertain.');
  });

  it('a call with side effects that overran its time limit may still take effect: listed as uncertain', async () => {
    server.reset({ script: [{ actions: [{ tool: 'slow', args: { ms: 2_000 } }] }, { answer: 'ok' }] });
    const { result } = await runWith(server);
    expect(result.uncertainEffects).toEqual([
      { tool: 'slow', callKey: 'run-1:1:1', what: 'slow call', why: 'the call timed out after 200 ms' },
    ]);
  });

  it('a run without uncertain effects has no such field', async () => {
    server.reset({ script: [{ actions: [{ tool: 'add', args: { a: 1, b: 2 } }] }, { answer: 'ok' }] });
    const { result } = await runWith(server);
    expect(result).not.toHaveProperty('uncertainEffects');
  });

  it('bounds an enormous result everywhere it goes: observation, trace and checkpoint', async () => {
    const flood = defineTool({
      name: 'flood',
      description: 'Returns 46 MB of text.',
      parameters: z.object({}),
      execute: async () => 'row 42 | customer@example.com\n'.repeat(1_500_000),
    });
    server.reset({ script: [{ actions: [{ tool: 'flood', args: {} }] }, { answer: 'ok' }] });
    const started = performance.now();
    const { result, traces, checkpoints } = await runWith(server, { tools: new ToolRegistry([flood]) });
    expect(result.status).toBe('succeeded');
    // Counting 46 MB of tokens would take seconds on the event loop; at most 32 K characters are counted.
    expect(performance.now() - started).toBeLessThan(5_000);
    const observation = lastObservation();
    expect(tokenCounterFor(MODEL)(observation)).toBeLessThanOrEqual(400);
    expect(observation).toMatch(/…\[cut: \d+ of \d+ chars\]$/);
    expect(traces[0]?.observations[0]?.length).toBeLessThanOrEqual(2_100);
    expect(JSON.stringify(checkpoints).length).toBeLessThan(200_000);
  });

  it('a ToolError code reaches the trace', async () => {
    expect(new ToolError('refused', 'no').kind).toBe('tool');
    server.reset({ script: [{ actions: [{ tool: 'broken', args: {} }] }, { answer: 'ok' }] });
    const { traces } = await runWith(server);
    expect(traces[0]?.error).toBe('broken: tool_failed');
  });
});

describe('model API errors', () => {
  it('retries a 429 after the retry-after it was given, and a 500', async () => {
    server.reset({
      script: [{ fault: 'rate_limit', retryAfterSeconds: 0 }, { fault: 'server_error' }, { answer: 'ok' }],
    });
    const before = server.requests.length;
    const { result, traces } = await runWith(server);
    expect(result).toMatchObject({ status: 'succeeded', steps: 1 });
    expect(server.requests.length - before).toBe(3);
    expect(traces[0]?.modelCalls).toBe(3);
  });

  it('waits as long as retry-after says', async () => {
    server.reset({ script: [{ fault: 'rate_limit', retryAfterSeconds: 1 }, { answer: 'ok' }] });
    const started = Date.now();
    const { result } = await runWith(server);
    expect(result.status).toBe('succeeded');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('fails with a retryable error once the retries are spent, so the worker can retry the job', async () => {
    server.reset({ rules: [() => ({ fault: 'server_error' })] });
    const { result } = await runWith(server, { options: { modelRetries: 2 } });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error).toMatchObject({ kind: 'model_api', code: 'http_500', retryable: true });
    expect(result.usage.totalTokens).toBe(0);
  });

  it('a garbled body is retried and charged its reservation, since it may have been billed', async () => {
    server.reset({ script: [{ fault: 'malformed_body' }, { answer: 'ok' }] });
    const { result, traces } = await runWith(server);
    expect(result.status).toBe('succeeded');
    expect(traces[0]?.modelCalls).toBe(2);
    const answered = server.requests.at(-1)!;
    const exact = countPromptTokens(answered.messages, answered.tools, tokenCounterFor(MODEL));
    expect(result.usage.promptTokens).toBeGreaterThan(2 * exact);
  });

  it('when the endpoint reports no usage, the estimate stands in', async () => {
    server.reset({ script: [{ answer: 'no usage here', usage: false }] });
    const { result } = await runWith(server);
    const request = server.requests.at(-1)!;
    const count = tokenCounterFor(MODEL);
    expect(result.usage.promptTokens).toBeGreaterThanOrEqual(
      countPromptTokens(request.messages, request.tools, count),
    );
    expect(result.usage.completionTokens).toBe(countCompletionTokens('no usage here', undefined, count));
    expect(result.usage.costUsd).toBeGreaterThan(0);
  });

  it('reported usage is authoritative and priced from the table', async () => {
    server.reset({ script: [{ answer: 'priced' }] });
    const { result } = await runWith(server);
    const request = server.requests.at(-1)!;
    const count = tokenCounterFor(MODEL);
    const prompt = countPromptTokens(request.messages, request.tools, count);
    const completion = countCompletionTokens('priced', undefined, count);
    const price = priceOf(MODEL);
    expect(result.usage).toEqual({
      promptTokens: prompt,
      completionTokens: completion,
      totalTokens: prompt + completion,
      costUsd: (prompt * price.inputPerMillion + completion * price.outputPerMillion) / 1e6,
    });
  });
});

describe('observers', () => {
  it('a step or checkpoint callback that throws is logged and never breaks the run', async () => {
    server.reset({ script: [{ actions: [{ tool: 'lookup', args: { id: 1 } }] }, { answer: 'ok' }] });
    const warn = vi.fn();
    const { result } = await runWith(server, {
      onStep: () => {
        throw new Error('trace store down');
      },
      onCheckpoint: async () => {
        throw new Error('redis down');
      },
      logger: { warn },
    });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'ok' });
    expect(warn.mock.calls.map((call) => call[0].callback)).toContain('step');
    expect(warn.mock.calls.map((call) => call[0].callback)).toContain('checkpoint');
  });
});
