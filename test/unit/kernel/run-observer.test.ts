// The kernel's run observer (src/kernel/run-observer.ts), against the scripted model over HTTP: what it is told,
// in order, for model calls (attempts, a failed attempt, the end with usage and cost) and tool calls; a call the
// budget refuses sends no attempt; a final turn and a memory summary say so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunObserver } from '../../../src/kernel/run-observer.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { runWith } from '../../support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

function recorder(): { observer: RunObserver; events: string[]; costs: number[] } {
  const events: string[] = [];
  const costs: number[] = [];
  const observer: RunObserver = {
    modelCall(call) {
      events.push(`model ${call.purpose} ${call.model} t=${call.temperature} msgs=${call.messages.length}`);
      return {
        attempt: (n, maxTokens) => events.push(`  attempt ${n} max=${maxTokens}`),
        attemptFailed: (n, error) => events.push(`  failed ${n} ${error.code}`),
        ended: (result, costUsd) => {
          costs.push(costUsd);
          const how = result.ok
            ? `ok ${result.completion.finishReason} ${result.completion.responseId}`
            : `stop ${result.stop}`;
          events.push(`  ended ${how} attempts=${result.attempts} tokens=${result.usage.promptTokens > 0}`);
        },
      };
    },
    toolCall(call) {
      events.push(`tool ${call.name} ${call.callId} step=${call.step} args=${JSON.stringify(call.args)}`);
      return {
        ended: (outcome) => events.push(`  tool ended ok=${outcome.ok} ${outcome.errorCode ?? ''}`.trimEnd()),
      };
    },
  };
  return { observer, events, costs };
}

describe('the run observer', () => {
  it('hears every attempt, a failed one, every tool call and each end, in order', async () => {
    server.reset({
      script: [
        { fault: 'server_error' },
        {
          actions: [
            { tool: 'add', args: { a: 2, b: 3 } },
            { tool: 'broken', args: {} },
          ],
        },
        { answer: 'five' },
      ],
    });
    const { observer, events, costs } = recorder();
    const before = server.requests.length;
    const { result } = await runWith(server, { observer, options: { temperature: 0.5 } });
    expect(result.answer).toBe('five');
    const id = (n: number) => `chatcmpl-scripted-${server.requests[before + n]!.index}`;
    expect(events.slice(0, 7)).toEqual([
      'model step gpt-4-turbo-preview t=0.5 msgs=2',
      '  attempt 1 max=512',
      '  failed 1 http_500',
      '  attempt 2 max=512',
      `  ended ok tool_calls ${id(1)} attempts=2 tokens=true`,
      expect.stringMatching(/^tool add \S+ step=1 args=\{"a":2,"b":3\}$/),
      expect.stringMatching(/^tool broken \S+ step=1 args=\{\}$/),
    ]);
    // The two calls run concurrently and end in either order.
    expect(events.slice(7, 9).sort()).toEqual(['  tool ended ok=false tool_failed', '  tool ended ok=true']);
    expect(events.slice(9)).toEqual([
      'model step gpt-4-turbo-preview t=0.5 msgs=5',
      '  attempt 1 max=512',
      `  ended ok stop ${id(2)} attempts=1 tokens=true`,
    ]);
    // The costs it is told add up to the run's.
    expect(costs.reduce((a, b) => a + b, 0)).toBeCloseTo(result.usage.costUsd, 12);
  });

  it('the last step is a final call', async () => {
    server.reset({ script: [{ actions: [{ tool: 'add', args: { a: 1, b: 1 } }] }, { answer: 'two' }] });
    const { observer, events } = recorder();
    const { result } = await runWith(server, { observer, budget: { maxSteps: 2 } });
    expect(result.answer).toBe('two');
    expect(events.filter((e) => e.startsWith('model'))).toEqual([
      'model step gpt-4-turbo-preview t=0.2 msgs=2',
      // system, task, the model's turn and its result, the final turn's instruction (docs/memory.md)
      'model final gpt-4-turbo-preview t=0.2 msgs=5',
    ]);
  });

  it('a call the budget cannot cover sends no attempt, and is told it ended', async () => {
    server.reset({ script: [{ answer: 'too dear' }] });
    const { observer, events } = recorder();
    const before = server.requests.length;
    const { result } = await runWith(server, { observer, budget: { maxTokens: 40 } });
    expect(result.status).toBe('stopped');
    expect(server.requests.length).toBe(before);
    expect(events.length).toBeGreaterThan(0);
    expect(events.some((e) => /^ {2}attempt /.test(e))).toBe(false);
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]).toMatch(/^model (step|final) /);
      expect(events[i + 1]).toMatch(/^ {2}ended stop token_budget attempts=0/);
    }
  });
});
