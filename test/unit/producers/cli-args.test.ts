// The CLI's pure half: every flag maps to its task field, numbers are parsed strictly and a bad one names its
// flag, anything unknown is refused. No Redis here.
import { describe, expect, it } from 'vitest';
import { CliArgsError, flagForPath, formatProgress, parseCliArgs } from '../../../producers/cli-args.js';
import { validateTask } from '../../../src/queue/task-schema.js';

function task(argv: string[]): Record<string, unknown> {
  const command = parseCliArgs(argv);
  if (command.mode !== 'task') throw new Error(`expected a task, got ${command.mode}`);
  return command.task;
}

function refusal(argv: string[]): string {
  try {
    parseCliArgs(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliArgsError);
    return (error as CliArgsError).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be refused`);
}

describe('parseCliArgs', () => {
  it('maps --task alone to a task with only that field', () => {
    expect(parseCliArgs(['--task', 'Find the top 3 customers'])).toEqual({
      mode: 'task',
      task: { task: 'Find the top 3 customers' },
      wait: false,
      timeoutMs: undefined,
    });
  });

  it('maps every flag to its field', () => {
    const command = parseCliArgs([
      '--task',
      'Email the top customers',
      '--max-steps',
      '6',
      '--max-tokens=40000',
      '--max-cost',
      '0.05',
      '--tools',
      'sql_query, list_tables,send_email',
      '--model',
      'gpt-4o-mini',
      '--protocol',
      'json',
      '--metadata',
      'batch=nightly-2026-11-30',
      '--metadata',
      'report=q1=top',
      '--tenant',
      'acme',
      '--idempotency-key',
      'nightly:42',
      '--wait',
      '--timeout',
      '90.5',
    ]);
    expect(command).toEqual({
      mode: 'task',
      task: {
        task: 'Email the top customers',
        budget: { maxSteps: 6, maxTokens: 40000, maxCostUsd: 0.05 },
        tools: ['sql_query', 'list_tables', 'send_email'],
        model: 'gpt-4o-mini',
        protocol: 'json',
        metadata: { batch: 'nightly-2026-11-30', report: 'q1=top' },
        tenant: 'acme',
        idempotencyKey: 'nightly:42',
      },
      wait: true,
      timeoutMs: 90_500,
    });
    if (command.mode === 'task') expect(validateTask(command.task).ok).toBe(true);
  });

  it('sets only the budget fields that are given', () => {
    expect(task(['--task', 't', '--max-tokens', '1000'])).toEqual({ task: 't', budget: { maxTokens: 1000 } });
    expect(task(['--task', 't', '--max-cost', '.5'])).toEqual({ task: 't', budget: { maxCostUsd: 0.5 } });
  });

  it('waits without a limit when --timeout is absent', () => {
    expect(parseCliArgs(['--task', 't', '--wait'])).toMatchObject({ wait: true, timeoutMs: undefined });
  });

  it.each([
    ['--max-steps', 'abc'],
    ['--max-steps', '3.5'],
    ['--max-steps', '1e2'],
    ['--max-steps', ''],
    ['--max-tokens', '12k'],
    ['--max-tokens', '0x10'],
    ['--max-cost', 'cheap'],
    ['--max-cost', '0.05$'],
    ['--max-cost', 'Infinity'],
    ['--max-cost', 'NaN'],
  ])('refuses %s %j naming the flag', (flag, value) => {
    expect(refusal(['--task', 't', `${flag}=${value}`])).toContain(flag);
  });

  it('leaves ranges to the task schema, which names the field', () => {
    const mapped = task(['--task', 't', '--max-steps', '0', '--max-cost=-1']);
    expect(mapped).toEqual({ task: 't', budget: { maxSteps: 0, maxCostUsd: -1 } });
    const validation = validateTask(mapped);
    expect(validation.ok).toBe(false);
    if (!validation.ok) {
      expect(validation.issues.map((issue) => issue.path).sort()).toEqual([
        'budget.maxCostUsd',
        'budget.maxSteps',
      ]);
    }
  });

  it('refuses a bad --timeout, naming it, and --timeout without --wait', () => {
    expect(refusal(['--task', 't', '--wait', '--timeout', 'soon'])).toContain('--timeout');
    expect(refusal(['--task', 't', '--wait', '--timeout', '0'])).toContain('--timeout');
    expect(refusal(['--task', 't', '--timeout', '5'])).toContain('--timeout needs --wait');
  });

  it('refuses malformed or repeated --metadata', () => {
    expect(refusal(['--task', 't', '--metadata', 'novalue'])).toContain('--metadata');
    expect(refusal(['--task', 't', '--metadata', '=v'])).toContain('--metadata');
    expect(refusal(['--task', 't', '--metadata', 'a=1', '--metadata', 'a=2'])).toContain('repeats');
  });

  it('keeps a __proto__ metadata key as data', () => {
    const metadata = task(['--task', 't', '--metadata', '__proto__=x'])['metadata'] as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(Object.keys(metadata)).toEqual(['__proto__']);
  });

  it('refuses an unknown flag', () => {
    expect(refusal(['--task', 't', '--max-stepz', '3'])).toBe('unknown option --max-stepz');
    expect(refusal(['--task', 't', '--batch', 'tasks.jsonl'])).toMatch(/--task cannot go with --batch/);
    expect(refusal(['--task', 't', '--frobnicate'])).toBe('unknown option --frobnicate');
  });

  it('refuses positional arguments, a missing value, a repeated flag and a missing --task', () => {
    expect(refusal(['--task', 't', 'extra'])).toContain("Unexpected argument 'extra'");
    expect(refusal(['--task'])).toContain('--task');
    expect(refusal(['--task', 'a', '--task', 'b'])).toBe('--task is given more than once');
    expect(refusal(['--max-steps', '3'])).toBe('--task, --input or --batch is required');
    expect(refusal(['--task', 't', '--wait=yes'])).toContain('--wait');
  });

  it('answers --help and -h', () => {
    expect(parseCliArgs(['--help'])).toEqual({ mode: 'help' });
    expect(parseCliArgs(['-h'])).toEqual({ mode: 'help' });
  });

  it('passes an empty --task and an empty --tools to the schema', () => {
    expect(task(['--task', ''])).toEqual({ task: '' });
    expect(task(['--task', 't', '--tools', ''])).toEqual({ task: 't', tools: [] });
  });
});

describe('flagForPath', () => {
  it('names the flag behind a field path', () => {
    expect(flagForPath('budget.maxSteps')).toBe('--max-steps');
    expect(flagForPath('tools.1')).toBe('--tools');
    expect(flagForPath('metadata.batch')).toBe('--metadata');
    expect(flagForPath('budget.deadlineMs')).toBeUndefined();
    expect(flagForPath('')).toBeUndefined();
  });
});

describe('formatProgress', () => {
  it('writes the worker progress as one human line', () => {
    expect(
      formatProgress('42', { step: 3, maxSteps: 8, totalTokens: 2140, costUsd: 0.0241, toolCalls: 5 }),
    ).toBe('job 42: step 3/8 · 2,140 tokens · $0.0241 · 5 tool calls');
    expect(formatProgress('42', { step: 1, totalTokens: 90 })).toBe('job 42: step 1 · 90 tokens');
  });

  it('tolerates any shape', () => {
    expect(formatProgress('7', null)).toBe('job 7: no progress yet');
    expect(formatProgress('7', 0)).toBe('job 7: no progress yet');
    expect(formatProgress('7', 40)).toBe('job 7: progress 40');
    expect(formatProgress('7', 'thinking')).toBe('job 7: thinking');
    expect(formatProgress('7', { phase: 'sql' })).toBe('job 7: {"phase":"sql"}');
    expect(formatProgress('7', [1, 2])).toBe('job 7: [1,2]');
    expect(formatProgress('7', { step: 'x'.repeat(500) })).toHaveLength('job 7: '.length + 200);
  });
});

describe('batch mode', () => {
  it('reads --batch with its budget flags', () => {
    expect(
      parseCliArgs(['--batch', 'b.jsonl', '--batch-max-cost', '0.5', '--batch-max-tokens', '9000', '--wait']),
    ).toEqual({
      mode: 'batch',
      file: 'b.jsonl',
      budget: { maxCostUsd: 0.5, maxTokens: 9000 },
      name: undefined,
      forecast: false,
      wait: true,
      timeoutMs: undefined,
    });
  });

  it('refuses batch flags without --batch and bad numbers, naming the flag', () => {
    expect(() => parseCliArgs(['--task', 't', '--batch-max-cost', '1'])).toThrow(
      /--batch-max-cost needs --batch/,
    );
    expect(() => parseCliArgs(['--batch', 'b.jsonl', '--batch-max-tokens', 'lots'])).toThrow(
      /--batch-max-tokens/,
    );
  });
});

describe('cancel mode', () => {
  it('reads --cancel with --wait and --timeout', () => {
    expect(parseCliArgs(['--cancel', '42'])).toEqual({
      mode: 'cancel',
      jobId: '42',
      wait: false,
      timeoutMs: undefined,
    });
    expect(parseCliArgs(['--cancel', 'child-ab', '--wait', '--timeout', '5'])).toEqual({
      mode: 'cancel',
      jobId: 'child-ab',
      wait: true,
      timeoutMs: 5_000,
    });
  });

  it('refuses a flag of a task or batch with --cancel, and an empty id', () => {
    expect(refusal(['--cancel', '42', '--task', 'x'])).toBe(
      '--task cannot go with --cancel: it names a task enqueued already',
    );
    expect(refusal(['--cancel', '42', '--batch', 'f.jsonl'])).toMatch(/--batch cannot go with --cancel/);
    expect(refusal(['--cancel', ' '])).toBe('--cancel needs the job id of a task');
    expect(refusal(['--cancel', '42', '--timeout', '5'])).toBe('--timeout needs --wait');
  });
});
