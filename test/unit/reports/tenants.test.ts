// The batch report's per-tenant totals: grouped by the task's tenant (kept with its run), exact sums that add up
// to the summary, a line of their own for tasks without a tenant, shown escaped in every rendering, and absent
// from batches whose tasks name no tenant.
import { describe, expect, it } from 'vitest';
import {
  buildBatchReport,
  type BatchRecord,
  type BatchRunInput,
} from '../../../src/reports/batch-summary.js';
import { renderHtml } from '../../../src/reports/render-html.js';
import { renderMarkdown } from '../../../src/reports/render-markdown.js';
import { renderText } from '../../../src/reports/render-text.js';

const BATCH: BatchRecord = {
  batchId: 'nightly-tenants',
  name: null,
  tasks: 5,
  jobIds: ['j1', 'j2', 'j3', 'j4', 'j5'],
  maxCostUsd: null,
  maxTokens: null,
  state: 'running',
  summary: null,
  createdAt: new Date('2026-12-01T01:00:00Z'),
  completedAt: null,
};

function run(jobId: string, overrides: Partial<BatchRunInput>): BatchRunInput {
  return {
    jobId,
    task: `task ${jobId}`,
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'done',
    steps: 2,
    toolCalls: 1,
    promptTokens: 100,
    completionTokens: 10,
    totalTokens: 110,
    costUsd: 0.1,
    error: null,
    ...overrides,
  };
}

const RUNS = [
  run('j1', { tenant: 'globex', costUsd: 0.2, promptTokens: 200, totalTokens: 210 }),
  run('j2', { tenant: 'acme', costUsd: 0.1 }),
  run('j3', { tenant: 'acme', costUsd: 0.2, status: 'stopped', stopReason: 'max_steps' }),
  run('j4', { tenant: null, costUsd: 0.0000000001 }),
  run('j5', { tenant: 'acme', status: 'running' }),
];
const report = buildBatchReport(BATCH, RUNS, { generatedAt: new Date('2026-12-01T02:00:00Z') });

describe('per-tenant totals in batch reports', () => {
  it('groups the finished tasks by tenant, by name, tasks without one last, with exact sums', () => {
    expect(report.tenants).toEqual([
      {
        tenant: 'acme',
        tasks: 2,
        running: 1,
        usage: { promptTokens: 200, completionTokens: 20, totalTokens: 220, costUsd: 0.3 },
      },
      {
        tenant: 'globex',
        tasks: 1,
        running: 0,
        usage: { promptTokens: 200, completionTokens: 10, totalTokens: 210, costUsd: 0.2 },
      },
      {
        tenant: null,
        tasks: 1,
        running: 0,
        usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd: 0.0000000001 },
      },
    ]);
    // The lines add up to the summary.
    const sum = report.tenants.reduce((total, line) => total + line.usage.totalTokens, 0);
    expect(sum).toBe(report.summary.usage.totalTokens);
    expect(report.tenants.reduce((n, line) => n + line.tasks, 0)).toBe(
      report.summary.succeeded + report.summary.stopped + report.summary.failed,
    );
  });

  it('shows a line per tenant in the terminal summary', () => {
    const text = renderText(report);
    expect(text).toContain('Tenants:   acme: 2 (+1 running) tasks, 220 tokens, $0.30');
    expect(text).toContain('           globex: 1 task, 210 tokens, $0.20');
    expect(text).toContain('           (no tenant): 1 task, 110 tokens,');
  });

  it('shows a Tenants table in the Markdown and the HTML', () => {
    const markdown = renderMarkdown(report);
    expect(markdown).toContain('## Tenants');
    expect(markdown).toContain('| acme | 2 (+1 running) | 200 | 20 | 220 | $0.30 |');
    const html = renderHtml(report);
    expect(html).toContain('<h2>Tenants</h2>');
    expect(html).toMatch(/<td>globex<\/td><td class="num">1<\/td>/);
  });

  it('has no tenant lines when no task of the batch has a tenant', () => {
    const plain = buildBatchReport(
      BATCH,
      RUNS.map((r) => ({ ...r, tenant: null })),
    );
    expect(plain.tenants).toEqual([]);
    expect(renderText(plain)).not.toContain('Tenants:');
    expect(renderMarkdown(plain)).not.toContain('## Tenants');
    expect(renderHtml(plain)).not.toContain('Tenants');
  });
});
