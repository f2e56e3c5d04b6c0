// Regressions found by review: each failed before its fix.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseEnv, redactUrl } from '../../../config/env.js';
import { deterministicSummary } from '../../../src/kernel/memory.js';
import { truncateChars, truncateToTokens } from '../../../src/kernel/truncate.js';
import { tokenCounterFor } from '../../../src/kernel/tokens.js';

describe('regressions', () => {
  it('planCall returns when the dollar budget pays for more than 2^53 tokens', () => {
    // In a child process: the bug was a synchronous endless loop no test timeout can stop.
    const code =
      "import { planCall } from './src/kernel/budget.ts';" +
      'console.log(JSON.stringify(planCall({ promptTokens: 0, completionTokens: 0 },' +
      ' { maxSteps: 8, maxTokens: 50_000, maxCostUsd: 0.05, deadlineMs: 300_000 },' +
      ' { inputPerMillion: 0, outputPerMillion: 1e-15 },' +
      ' { promptTokens: 100, desiredMaxTokens: 512, minCompletionTokens: 64 })));';
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: process.cwd(),
      timeout: 20_000,
      encoding: 'utf8',
    });
    expect(child.signal).toBeNull();
    expect(JSON.parse(child.stdout)).toEqual({ ok: true, maxTokens: 512 });
  });

  it('redactUrl hides a password that contains an unencoded @', () => {
    expect(redactUrl('redis://default:p@ss@redis.internal:6379')).not.toMatch(/ss@redis/);
    expect(redactUrl('mysql://root:sekret@db:3306/x')).toBe('mysql://root:***@db:3306/x');
    expect(redactUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });

  it('truncateToTokens stays within a limit smaller than its marker', () => {
    const count = tokenCounterFor('gpt-4o');
    expect(count(truncateToTokens('hello world '.repeat(100), 5, count))).toBeLessThanOrEqual(5);
  });

  it('cuts never split an emoji in half', () => {
    const count = tokenCounterFor('gpt-4o');
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])/;
    expect(truncateToTokens('😀'.repeat(300), 60, count)).not.toMatch(lone);
    expect(truncateChars('😀😀', 1)).not.toMatch(lone);
  });

  it('whitespace and hex are not numbers in the environment', () => {
    expect(parseEnv({ API_PORT: ' ' }).API_PORT).toBe(3100);
    expect(() => parseEnv({ WORKER_CONCURRENCY: '0x10' })).toThrow(/WORKER_CONCURRENCY/);
    expect(() => parseEnv({ AGENT_MAX_TOKENS: '1e3' })).toThrow(/AGENT_MAX_TOKENS="1e3"/);
  });

  it('the deterministic summary has no empty items and keeps a message on one line', () => {
    const summary = deterministicSummary(
      'Done: queried orders. Goal: email them.',
      [
        { role: 'assistant', content: null },
        { role: 'assistant', content: 'line one\nline two' },
      ],
      (message) => (message.content ?? '').length,
    );
    expect(summary).not.toMatch(/^- $/m);
    expect(summary).toMatch(/^- I wrote: line one line two$/m);
  });
});
