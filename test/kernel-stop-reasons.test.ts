// Every stop reason of CONTRACT §4, each reached through the real openai client and a scripted model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../src/testing/scripted-model-server.js';
import { countPromptTokens, tokenCounterFor } from '../src/kernel/tokens.js';
import { MODEL, runWith, type ToolLog } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

const lookup = (id: number) => ({ actions: [{ tool: 'lookup', args: { id } }] });
/** A model that never stops looking customers up, a new one each time (so it is not repeating itself). */
const endlessLookups = () => {
  let id = 0;
  return (request: RecordedRequest) =>
    request.tools ? lookup(++id) : { answer: `looked up ${id} customers` };
};

describe('stop reasons', () => {
  it('answer: the model answers, the run succeeds', async () => {
    server.reset({ script: [lookup(7), { answer: 'customer-7' }] });
    const { result, traces } = await runWith(server);
    expect(result).toMatchObject({
      status: 'succeeded',
      stopReason: 'answer',
      answer: 'customer-7',
      steps: 2,
      toolCalls: 1,
      error: null,
    });
    expect(traces.map((t) => t.kind)).toEqual(['action', 'answer']);
    expect(result.usage.totalTokens).toBe(result.usage.promptTokens + result.usage.completionTokens);
    expect(result.usage.totalTokens).toBe(
      traces.reduce((sum, t) => sum + t.promptTokens + t.completionTokens, 0),
    );
  });

  it('max_steps: the last allowed step is a tool-less turn that asks for the best answer', async () => {
    server.reset({ script: [lookup(1), lookup(2), { answer: 'partial: customers 1 and 2' }] });
    const before = server.requests.length;
    const { result, traces } = await runWith(server, { budget: { maxSteps: 3 } });
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'max_steps',
      answer: 'partial: customers 1 and 2',
      steps: 3,
    });
    const last = server.requests.at(-1)!;
    expect(server.requests.length - before).toBe(3);
    expect(last.tools).toBeUndefined();
    expect(last.messages.at(-1)?.content).toMatch(/last step/);
    expect(traces.at(-1)?.kind).toBe('final');
  });

  it('token_budget: a call that would not fit is not made; the final turn uses what is left', async () => {
    server.reset({ rules: [endlessLookups()] });
    const before = server.requests.length;
    const { result } = await runWith(server, { budget: { maxTokens: 2_000 } });
    expect(result.status).toBe('stopped');
    expect(result.stopReason).toBe('token_budget');
    expect(result.answer).toMatch(/^looked up \d+ customers$/);
    expect(result.usage.totalTokens).toBeLessThanOrEqual(2_000);
    expect(server.requests.length - before).toBe(result.steps);
    // Why, in numbers: what was left and what the refused call needed.
    expect(result.stopDetail).toMatch(
      /^token budget: [\d,]+ of 2,000 tokens left; the next call needed [\d,]+ \([\d,]+ prompt \+ 64 completion tokens, with room for a final answer after it\)$/,
    );
    const [, left, needed] = /: ([\d,]+) of .* needed ([\d,]+)/.exec(result.stopDetail!)!;
    expect(Number(needed!.replace(/,/g, ''))).toBeGreaterThan(Number(left!.replace(/,/g, '')));
  });

  it('a call asks for fewer tokens rather than overshoot the budget', async () => {
    server.reset({ rules: [endlessLookups()] });
    const before = server.requests.length;
    const { result } = await runWith(server, { budget: { maxTokens: 700 } });
    const first = server.requests[before]!;
    const prompt = countPromptTokens(first.messages, first.tools, tokenCounterFor(MODEL));
    expect(first.body.max_tokens).toBeLessThan(512);
    expect(first.body.max_tokens).toBeGreaterThanOrEqual(64);
    expect(prompt + first.body.max_tokens).toBeLessThanOrEqual(700);
    expect(result.usage.totalTokens).toBeLessThanOrEqual(700);
  });

  it('cost_budget: the dollar limit binds before the token limit', async () => {
    server.reset({ rules: [endlessLookups()] });
    const { result } = await runWith(server, { budget: { maxCostUsd: 0.02 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
    expect(result.answer).toMatch(/^looked up \d+ customers$/);
    expect(result.usage.costUsd).toBeLessThanOrEqual(0.02);
    expect(result.usage.totalTokens).toBeLessThan(50_000);
    expect(result.stopDetail).toMatch(
      /^cost budget: \$0\.\d+ of \$0\.0200 left; the next call needed \$0\.\d+ at worst/,
    );
  });

  it('a budget too small for even one call stops before calling the model', async () => {
    server.reset({ script: [] });
    const before = server.requests.length;
    const { result } = await runWith(server, { budget: { maxTokens: 60 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'token_budget', steps: 0, answer: null });
    expect(result.usage.totalTokens).toBe(0);
    expect(result.stopDetail).toMatch(/^token budget: 60 of 60 tokens left; the next call needed \d+/);
    expect(result.stopDetail).toContain(
      'a final answer did not fit either (token budget: 60 of 60 tokens left',
    );
    expect(server.requests.length).toBe(before);
  });

  it('deadline: a model that hangs is cut off so the final turn still fits before the deadline', async () => {
    server.reset({ script: [{ fault: 'hang' }, { answer: 'best effort' }] });
    const started = Date.now();
    const { result } = await runWith(server, { budget: { deadlineMs: 1_500 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'deadline', answer: 'best effort' });
    expect(Date.now() - started).toBeLessThan(1_500 + 500);
  });

  it('deadline: when the final turn hangs too, the run still ends at the deadline', async () => {
    server.reset({ rules: [() => ({ fault: 'hang' })] });
    const started = Date.now();
    const { result } = await runWith(server, { budget: { deadlineMs: 1_200 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'deadline', answer: null });
    expect(Date.now() - started).toBeLessThan(1_200 + 500);
    expect(result.usage.totalTokens).toBeLessThanOrEqual(50_000);
  });

  it('a deadline that is no multiple of 20 ms still gives each call a whole-millisecond timeout', async () => {
    // 15% of 1,001 ms is kept for the final turn: a fractional timeout, which the openai client refuses.
    server.reset({ script: [lookup(7), { answer: 'done' }] });
    const { result } = await runWith(server, { budget: { deadlineMs: 1_001 } });
    expect(result.error).toBeNull();
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', answer: 'done' });
  });

  it('cancelled: aborting the signal ends the run and leaves the unfinished tool call to a resume', async () => {
    server.reset({ script: [{ actions: [{ tool: 'slow', args: { ms: 150 } }] }] });
    const controller = new AbortController();
    // Aborted once the tool is running (a timer alone could fire before the model answered, on a busy machine).
    const toolLog: ToolLog = { executions: [], flaky: { failuresLeft: 0 } };
    const watch = setInterval(() => {
      if (toolLog.executions.length > 0) controller.abort(new Error('shutdown'));
    }, 5);
    const { result, checkpoints, log } = await runWith(server, {
      signal: controller.signal,
      options: { toolTimeoutMs: 5_000 },
      log: toolLog,
    }).finally(() => clearInterval(watch));
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1 });
    expect(log.executions.map((e) => e.tool)).toEqual(['slow']);
    const last = checkpoints.at(-1)!;
    expect(last.pending?.results).toEqual([null]);
  });

  it('error: a 401 from the endpoint fails the run with a clear, non-retryable error', async () => {
    server.reset({ script: [{ fault: 'unauthorized' }] });
    const { result } = await runWith(server);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', steps: 0 });
    expect(result.error).toMatchObject({ kind: 'model_api', code: 'http_401', retryable: false });
  });

  it('error: the same action with the same result three times in a row ends the run', async () => {
    server.reset({ rules: [() => lookup(3)] });
    const { result } = await runWith(server);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', steps: 3 });
    expect(result.error).toMatchObject({ kind: 'model_behavior', code: 'repeated_action' });
    // The second time, the observation told the model it was repeating itself.
    const third = server.requests.at(-1)!;
    expect(third.messages.at(-1)?.content).toMatch(/already made this exact call/);
  });
});
