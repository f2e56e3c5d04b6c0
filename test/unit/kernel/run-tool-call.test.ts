// runToolCall outcome by outcome: refusals before the tool runs, results, timeouts, transient retries,
// aborts, and the tool's own error codes. Nothing here may throw.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ToolError, TransientToolError } from '../../../src/kernel/errors.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import {
  formatIssues,
  runToolCall,
  type ProposedCall,
  type ToolRunOptions,
} from '../../../src/kernel/run-tool-call.js';
import { defineTool, type Tool, type ToolContext } from '../../../src/kernel/tool.js';

const OPTIONS: ToolRunOptions = { defaultTimeoutMs: 1_000, transientRetries: 2, retryBaseDelayMs: 0 };
const ctx = (signal: AbortSignal = new AbortController().signal): ToolContext => ({
  signal,
  runId: 'run-1',
  callKey: 'run-1:3:0',
  step: 3,
  once: (effect) => effect(),
});
const call = (name: string, value: unknown = {}): ProposedCall => ({ name, args: { ok: true, value } });
const never = () => new Promise<never>(() => {});
const elapsed = async <T>(work: () => Promise<T>) => {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
};

function tool(name: string, execute: Tool['execute'], extra: Partial<Tool> = {}): Tool {
  return { name, description: name, parameters: z.object({}), execute, ...extra };
}

describe('refusals before the tool runs', () => {
  const executed: unknown[] = [];
  const registry = new ToolRegistry([
    defineTool({
      name: 'send_email',
      description: 'Send an email.',
      parameters: z.object({
        to: z.array(z.email()).min(1),
        subject: z.string(),
        options: z.object({ priority: z.enum(['low', 'high']), retries: z.number().int() }).optional(),
      }),
      execute: async (args) => {
        executed.push(args);
        return 'sent';
      },
    }),
  ]);

  it('an unknown tool lists the available ones', async () => {
    const outcome = await runToolCall(registry, call('send_mail'), ctx(), OPTIONS);
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'unknown_tool',
      output: 'Unknown tool "send_mail". Available tools: send_email.',
      attempts: 0,
    });
    expect(executed).toEqual([]);
  });

  it('an empty registry says so', async () => {
    const outcome = await runToolCall(new ToolRegistry([]), call('x'), ctx(), OPTIONS);
    expect(outcome.output).toBe('Unknown tool "x". Available tools: (none).');
  });

  it('prototype property names are unknown tools', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const outcome = await runToolCall(registry, call(name), ctx(), OPTIONS);
      expect(outcome.errorCode, name).toBe('unknown_tool');
    }
  });

  it('arguments that are not JSON are refused with the parser’s reason', async () => {
    const outcome = await runToolCall(
      registry,
      { name: 'send_email', args: { ok: false, reason: 'Unexpected end of JSON input' } },
      ctx(),
      OPTIONS,
    );
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'invalid_arguments',
      output: 'Arguments for send_email are not valid JSON: Unexpected end of JSON input',
      attempts: 0,
    });
  });

  it('schema issues name each field, nested ones by path', async () => {
    const outcome = await runToolCall(
      registry,
      call('send_email', {
        to: ['ok@example.com', 'not-an-email'],
        options: { priority: 'urgent', retries: 1.5 },
      }),
      ctx(),
      OPTIONS,
    );
    expect(outcome.ok).toBe(false);
    expect(outcome.errorCode).toBe('invalid_arguments');
    expect(outcome.attempts).toBe(0);
    expect(outcome.output).toMatch(/^Invalid arguments for send_email: /);
    for (const path of ['to.1: ', 'subject: ', 'options.priority: ', 'options.retries: '])
      expect(outcome.output).toContain(path);
    expect(executed).toEqual([]);
  });

  it('arguments that are not an object are an issue of the arguments as a whole', async () => {
    const outcome = await runToolCall(registry, call('send_email', 'hello'), ctx(), OPTIONS);
    expect(outcome.output).toMatch(/^Invalid arguments for send_email: \(arguments\): /);
  });

  it('null arguments are read as {}', async () => {
    const seen: unknown[] = [];
    const registry = new ToolRegistry([
      tool('noop', async (args) => {
        seen.push(args);
        return 'done';
      }),
    ]);
    const outcome = await runToolCall(registry, call('noop', null), ctx(), OPTIONS);
    expect(outcome).toMatchObject({ ok: true, output: 'done' });
    expect(seen).toEqual([{}]);
  });
});

describe('formatIssues', () => {
  it('joins at most five issues, each with its path', () => {
    const schema = z.object({
      a: z.string(),
      b: z.string(),
      c: z.string(),
      d: z.string(),
      e: z.string(),
      f: z.string(),
    });
    const result = schema.safeParse({});
    expect(result.success).toBe(false);
    if (result.success) return;
    const text = formatIssues(result.error.issues);
    expect(text.split('; ')).toHaveLength(5);
    expect(text).toMatch(/^a: .+; b: .+; c: .+; d: .+; e: .+$/);
    expect(text).not.toContain('f: ');
  });

  it('an empty path is shown as (arguments)', () => {
    const result = z.object({}).safeParse(42);
    if (result.success) throw new Error('expected an issue');
    expect(formatIssues(result.error.issues)).toMatch(/^\(arguments\): /);
  });
});

describe('results', () => {
  it('runs the tool with the parsed arguments (defaults applied) and its own signal', async () => {
    const seen: { args: unknown; ctx: ToolContext }[] = [];
    const parent = new AbortController();
    const registry = new ToolRegistry([
      defineTool({
        name: 'sql_query',
        description: 'Query.',
        parameters: z.object({ sql: z.string(), limit: z.number().default(100) }),
        execute: async (args, toolCtx) => {
          seen.push({ args, ctx: toolCtx });
          return [{ id: 1 }];
        },
      }),
    ]);
    const outcome = await runToolCall(
      registry,
      call('sql_query', { sql: 'SELECT 1' }),
      ctx(parent.signal),
      OPTIONS,
    );
    expect(outcome).toMatchObject({ ok: true, output: '[{"id":1}]', attempts: 1 });
    expect(outcome.errorCode).toBeUndefined();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.args).toEqual({ sql: 'SELECT 1', limit: 100 });
    expect(seen[0]?.ctx).toMatchObject({ runId: 'run-1', callKey: 'run-1:3:0', step: 3 });
    expect(seen[0]?.ctx.signal).not.toBe(parent.signal);
    expect(seen[0]?.ctx.signal.aborted).toBe(false);
  });

  it('renders strings as they are, undefined as OK, anything else as JSON', async () => {
    const registry = new ToolRegistry([
      tool('text', async () => 'plain "text"'),
      tool('nothing', async () => undefined),
      tool('number', async () => 42),
      tool('nul', async () => null),
    ]);
    const output = async (name: string) => (await runToolCall(registry, call(name), ctx(), OPTIONS)).output;
    expect(await output('text')).toBe('plain "text"');
    expect(await output('nothing')).toBe('OK');
    expect(await output('number')).toBe('42');
    expect(await output('nul')).toBe('null');
  });

  it('bounds what any tool returns or throws: a huge string, a huge object, a huge error message', async () => {
    // The object's elements are read through a proxy: rendering stops reading once the limit is reached.
    let reads = 0;
    const rows = Array.from({ length: 1_000_000 }, (_, i) => ({ id: i, name: `customer-${i}` }));
    const counted = new Proxy(rows, { get: (target, key) => (reads++, Reflect.get(target, key)) });
    const registry = new ToolRegistry([
      tool('text', async () => 'x'.repeat(50_000_000)),
      tool('object', async () => ({ rows: counted })),
      tool('fails', async () => {
        throw new Error(`bad input: ${'y'.repeat(20_000_000)}`);
      }),
    ]);
    const run = (name: string) =>
      runToolCall(registry, call(name), ctx(), { ...OPTIONS, maxOutputChars: 10_000 });

    const text = await run('text');
    expect(text.output).toBe(`${'x'.repeat(10_000)} …[cut: 49990000 chars]`);

    const object = await run('object');
    expect(object.ok).toBe(true);
    expect(object.output).toMatch(/^\{"rows":\[\{"id":0,"name":"customer-0"\},\{"id":1,/);
    expect(object.output.endsWith(' …[cut at 10000 chars]')).toBe(true);
    expect(object.output.length).toBeLessThanOrEqual(10_000);
    expect(reads).toBeLessThan(5_000);

    const error = await run('fails');
    expect(error).toMatchObject({ ok: false, errorCode: 'tool_failed' });
    expect(error.output.startsWith('Error: bad input: yyy')).toBe(true);
    expect(error.output.length).toBeLessThanOrEqual(10_000 + 30);

    // The default limit: a million characters.
    const unbounded = await runToolCall(registry, call('text'), ctx(), OPTIONS);
    expect(unbounded.output.length).toBeLessThanOrEqual(1_000_000 + 30);
  });

  it('renders what JSON.stringify refuses instead of failing the call', async () => {
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic['self'] = cyclic;
    const registry = new ToolRegistry([
      tool('cyclic', async () => cyclic),
      tool('big', async () => ({ n: 12345678901234567890n })),
    ]);
    const output = async (name: string) => (await runToolCall(registry, call(name), ctx(), OPTIONS)).output;
    expect(await output('cyclic')).toBe('{"name":"a","self":"[Circular]"}');
    expect(await output('big')).toBe('{"n":12345678901234567890}');
  });

  it('measures latency with the clock it is given', async () => {
    let t = 1_000;
    const registry = new ToolRegistry([tool('t', async () => 'x')]);
    const outcome = await runToolCall(registry, call('t'), ctx(), OPTIONS, () => (t += 7));
    expect(outcome.latencyMs).toBe(7);
  });
});

describe('timeouts', () => {
  it('a tool over its own limit times out, and its signal is aborted', async () => {
    let toolSignal: AbortSignal | undefined;
    const registry = new ToolRegistry([
      tool(
        'slow',
        async (_args, toolCtx) => {
          toolSignal = toolCtx.signal;
          await new Promise((resolve) => setTimeout(resolve, 5_000));
          return 'late';
        },
        { timeoutMs: 30 },
      ),
    ]);
    const { value: outcome, ms } = await elapsed(() => runToolCall(registry, call('slow'), ctx(), OPTIONS));
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'timeout',
      output: 'slow timed out after 30 ms.',
      attempts: 1,
    });
    expect(ms).toBeLessThan(1_000);
    expect(toolSignal?.aborted).toBe(true);
  });

  it('a tool that ignores its signal still times out, at the default limit when it sets none', async () => {
    const registry = new ToolRegistry([tool('stuck', never)]);
    const { value: outcome, ms } = await elapsed(() =>
      runToolCall(registry, call('stuck'), ctx(), { ...OPTIONS, defaultTimeoutMs: 40 }),
    );
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'timeout',
      output: 'stuck timed out after 40 ms.',
    });
    expect(ms).toBeGreaterThanOrEqual(35);
    expect(ms).toBeLessThan(1_000);
  });

  it('a timeout is not retried', async () => {
    let runs = 0;
    const registry = new ToolRegistry([
      tool(
        'stuck',
        () => {
          runs++;
          return never();
        },
        { timeoutMs: 20 },
      ),
    ]);
    const outcome = await runToolCall(registry, call('stuck'), ctx(), OPTIONS);
    expect(outcome.attempts).toBe(1);
    expect(runs).toBe(1);
  });
});

describe('transient failures', () => {
  const flaky = (failures: number, code?: string) => {
    let runs = 0;
    const t = tool('flaky', async () => {
      runs++;
      if (runs <= failures) throw new TransientToolError('connection reset', code ? { code } : undefined);
      return `ok after ${runs}`;
    });
    return { registry: new ToolRegistry([t]), runs: () => runs };
  };

  it('are retried inside the call', async () => {
    const { registry, runs } = flaky(2);
    const outcome = await runToolCall(registry, call('flaky'), ctx(), OPTIONS);
    expect(outcome).toMatchObject({ ok: true, output: 'ok after 3', attempts: 3 });
    expect(runs()).toBe(3);
  });

  it('a bounded number of times, then reported with the tool’s code', async () => {
    const { registry, runs } = flaky(100, 'db_down');
    const outcome = await runToolCall(registry, call('flaky'), ctx(), OPTIONS);
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'db_down',
      output: 'Error (after 3 attempts): connection reset',
      attempts: 3,
    });
    expect(runs()).toBe(3);
  });

  it('no retries when none are configured', async () => {
    const { registry, runs } = flaky(100);
    const outcome = await runToolCall(registry, call('flaky'), ctx(), { ...OPTIONS, transientRetries: 0 });
    expect(outcome).toMatchObject({
      errorCode: 'transient',
      output: 'Error: connection reset',
      attempts: 1,
    });
    expect(runs()).toBe(1);
  });

  it('the backoff grows: base, then double (with jitter between half and all of it)', async () => {
    const { registry } = flaky(2);
    const { value: outcome, ms } = await elapsed(() =>
      runToolCall(registry, call('flaky'), ctx(), { ...OPTIONS, retryBaseDelayMs: 40 }),
    );
    expect(outcome.ok).toBe(true);
    // 40 * [0.5, 1] + 80 * [0.5, 1] = [60, 120] ms
    expect(ms).toBeGreaterThanOrEqual(55);
    expect(ms).toBeLessThan(1_000);
  });
});

describe('tool errors', () => {
  it('a non-transient ToolError is reported at once with its code', async () => {
    let runs = 0;
    const registry = new ToolRegistry([
      tool('guarded', async () => {
        runs++;
        throw new ToolError('refused', 'only SELECT is allowed');
      }),
    ]);
    const outcome = await runToolCall(registry, call('guarded'), ctx(), OPTIONS);
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'refused',
      output: 'Error: only SELECT is allowed',
      attempts: 1,
    });
    expect(runs).toBe(1);
  });

  it('any other error is tool_failed, and never thrown', async () => {
    const registry = new ToolRegistry([
      tool('bug', async () => {
        throw new TypeError('x is undefined');
      }),
      tool('weird', async () => {
        throw 'a string';
      }),
      tool('sync', () => {
        throw new Error('thrown before any promise');
      }),
    ]);
    const run = (name: string) => runToolCall(registry, call(name), ctx(), OPTIONS);
    expect(await run('bug')).toMatchObject({
      errorCode: 'tool_failed',
      output: 'Error: x is undefined',
    });
    expect(await run('weird')).toMatchObject({
      errorCode: 'tool_failed',
      output: 'Error: a string',
    });
    expect(await run('sync')).toMatchObject({
      errorCode: 'tool_failed',
      output: 'Error: thrown before any promise',
    });
  });
});

describe('aborts by the run', () => {
  it('an abort during the call ends it at once as aborted, even when the tool ignores its signal', async () => {
    const parent = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const registry = new ToolRegistry([
      tool('stuck', (_args, toolCtx) => {
        toolSignal = toolCtx.signal;
        return never();
      }),
    ]);
    setTimeout(() => parent.abort(new Error('cancelled by user')), 20);
    const { value: outcome, ms } = await elapsed(() =>
      runToolCall(registry, call('stuck'), ctx(parent.signal), { ...OPTIONS, defaultTimeoutMs: 5_000 }),
    );
    expect(outcome).toMatchObject({
      ok: false,
      errorCode: 'aborted',
      output: 'stuck was interrupted.',
      attempts: 1,
    });
    expect(ms).toBeLessThan(1_000);
    expect(toolSignal?.aborted).toBe(true);
  });

  it('an already aborted run does not start the tool', async () => {
    const parent = new AbortController();
    parent.abort();
    let runs = 0;
    const registry = new ToolRegistry([
      tool('t', async () => {
        runs++;
        return 'x';
      }),
    ]);
    const outcome = await runToolCall(registry, call('t'), ctx(parent.signal), OPTIONS);
    expect(outcome).toMatchObject({ ok: false, errorCode: 'aborted' });
    expect(runs).toBe(0);
  });

  it('an abort during the retry backoff is aborted, not a retry', async () => {
    const parent = new AbortController();
    let runs = 0;
    const registry = new ToolRegistry([
      tool('flaky', async () => {
        runs++;
        throw new TransientToolError('connection reset');
      }),
    ]);
    setTimeout(() => parent.abort(), 30);
    const { value: outcome, ms } = await elapsed(() =>
      runToolCall(registry, call('flaky'), ctx(parent.signal), { ...OPTIONS, retryBaseDelayMs: 10_000 }),
    );
    expect(outcome).toMatchObject({ ok: false, errorCode: 'aborted', attempts: 1 });
    expect(runs).toBe(1);
    expect(ms).toBeLessThan(1_000);
  });

  it('a tool error caused by the abort is reported as aborted', async () => {
    const parent = new AbortController();
    const registry = new ToolRegistry([
      tool('honest', async () => {
        parent.abort();
        throw new ToolError('query_killed', 'the query was killed');
      }),
    ]);
    const outcome = await runToolCall(registry, call('honest'), ctx(parent.signal), OPTIONS);
    expect(outcome.errorCode).toBe('aborted');
  });
});

describe('side effects the run stops waiting for', () => {
  it('a cancelled call of a tool with side effects keeps running, tracked until it records its outcome', async () => {
    const { EffectsInFlight } = await import('../../../src/kernel/effects-in-flight.js');
    const effectsInFlight = new EffectsInFlight();
    let finish!: () => void;
    const recorded: string[] = [];
    const send = tool('send', async () => {
      await new Promise<void>((resolve) => (finish = resolve));
      recorded.push('sent and recorded');
      return 'sent';
    });
    const controller = new AbortController();
    const pending = runToolCall(new ToolRegistry([send]), call('send'), ctx(controller.signal), {
      ...OPTIONS,
      effects: effectsInFlight,
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort('worker-shutdown');
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: false, errorCode: 'aborted' });
    // The run moved on, but whether it took effect is not known yet.
    expect(outcome.uncertain).toMatchObject({ tool: 'send', callKey: 'run-1:3:0' });
    expect(effectsInFlight.size).toBe(1);
    expect(await effectsInFlight.settled(20)).toBe(false);

    finish();
    expect(await effectsInFlight.settled(1_000)).toBe(true);
    expect(recorded).toEqual(['sent and recorded']);
    expect(effectsInFlight.size).toBe(0);
  });

  it('a read-only call is neither tracked nor uncertain', async () => {
    const { EffectsInFlight } = await import('../../../src/kernel/effects-in-flight.js');
    const effectsInFlight = new EffectsInFlight();
    const peek = tool('peek', never, { readOnly: true });
    const controller = new AbortController();
    const pending = runToolCall(new ToolRegistry([peek]), call('peek'), ctx(controller.signal), {
      ...OPTIONS,
      effects: effectsInFlight,
    });
    controller.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ errorCode: 'aborted' });
    expect(outcome.uncertain).toBeUndefined();
    expect(effectsInFlight.size).toBe(0);
  });

  it('an UncertainOutcome is observed as its text and carried as the call’s uncertain effect', async () => {
    const { UncertainOutcome } = await import('../../../src/kernel/tool.js');
    const maybe = tool(
      'maybe',
      async () => new UncertainOutcome('May have gone out.', { what: 'x', why: 'y' }),
    );
    const outcome = await runToolCall(new ToolRegistry([maybe]), call('maybe'), ctx(), OPTIONS);
    expect(outcome).toMatchObject({
      ok: true,
      output: 'May have gone out.',
      uncertain: { tool: 'maybe', callKey: 'run-1:3:0', what: 'x', why: 'y' },
    });
  });
});
