// The batch file of `npm run enqueue -- --batch`: every line checked before anything is enqueued, every error
// naming its line and field.
import { describe, expect, it } from 'vitest';
import { parseBatchFile } from '../producers/batch-file.js';
import { validateBatch } from '../src/batch/batch-schema.js';
import { summarizeBatch } from '../src/batch/batch-summary.js';
import type { AgentResult } from '../src/kernel/types.js';

describe('batch file', () => {
  it('reads one task per line and skips blank lines', () => {
    const parsed = parseBatchFile('{"task": "a"}\n\n{"task": "b", "budget": {"maxSteps": 3}}\r\n');
    expect(parsed).toEqual({ ok: true, tasks: [{ task: 'a' }, { task: 'b', budget: { maxSteps: 3 } }] });
  });

  it('names the line and the field of every bad line', () => {
    const parsed = parseBatchFile(
      [
        '{"task": "fine"}',
        '{"task": ""}',
        'not json',
        '{"task": "x", "tools": ["rm"]}',
        '{"task": "y", "extra": 1}',
      ].join('\n'),
    );
    expect(parsed.ok).toBe(false);
    const errors = parsed.ok ? [] : parsed.errors;
    expect(errors).toHaveLength(4);
    expect(errors[0]).toMatch(/^line 2: task: must not be empty/);
    expect(errors[1]).toMatch(/^line 3: not valid JSON/);
    expect(errors[2]).toMatch(/^line 4: tools\.0:/);
    expect(errors[3]).toMatch(/^line 5: extra: unknown field/);
  });

  it('refuses an empty file', () => {
    expect(parseBatchFile('\n\n')).toEqual({ ok: false, errors: ['the file holds no task'] });
  });
});

describe('batch schema and summary', () => {
  it('names the task and field of a bad task in a batch', () => {
    const validation = validateBatch({
      tasks: [{ task: 'ok' }, { task: 'x', budget: { maxSteps: 0 } }],
      budget: { maxCostUsd: -1 },
    });
    expect(validation.ok).toBe(false);
    const paths = validation.ok ? [] : validation.issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['tasks.1.budget.maxSteps', 'budget.maxCostUsd']));
  });

  it('the summary is the sum over the results', () => {
    const result = (status: AgentResult['status'], prompt: number, cost: number): AgentResult => ({
      jobId: 'j',
      status,
      stopReason: status === 'succeeded' ? 'answer' : status === 'failed' ? 'error' : 'cost_budget',
      answer: null,
      steps: 1,
      toolCalls: 0,
      usage: { promptTokens: prompt, completionTokens: 1, totalTokens: prompt + 1, costUsd: cost },
      error: null,
    });
    const summary = summarizeBatch('b', 5, [
      result('succeeded', 10, 0.1),
      result('stopped', 20, 0.2),
      result('failed', 0, 0),
    ]);
    expect(summary).toEqual({
      batchId: 'b',
      tasks: 5,
      succeeded: 1,
      stopped: 1,
      failed: 1,
      usage: { promptTokens: 30, completionTokens: 3, totalTokens: 33, costUsd: 0.3 },
    });
  });
});
