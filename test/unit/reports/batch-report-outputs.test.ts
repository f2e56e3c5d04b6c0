// Structured outputs in batch reports: one column per top-level key, values cut to one line, a run without a
// value said so, and no Outputs table at all for a batch whose agents have no output schema.
import { describe, expect, it } from 'vitest';
import {
  buildBatchReport,
  type BatchRecord,
  type BatchRunInput,
} from '../../../src/reports/batch-summary.js';
import { OUTPUT_CELL_CHARS, outputTable } from '../../../src/reports/output-columns.js';
import { renderHtml } from '../../../src/reports/render-html.js';
import { renderMarkdown } from '../../../src/reports/render-markdown.js';
import { renderText } from '../../../src/reports/render-text.js';

const BATCH: BatchRecord = {
  batchId: 'kpi-week-48',
  name: null,
  tasks: 3,
  jobIds: ['j1', 'j2', 'j3'],
  maxCostUsd: null,
  maxTokens: null,
  state: 'completed',
  summary: null,
  createdAt: new Date('2026-11-30T01:00:00Z'),
  completedAt: new Date('2026-11-30T02:00:00Z'),
};

function run(jobId: string, overrides: Partial<BatchRunInput>): BatchRunInput {
  return {
    jobId,
    task: `KPI digest ${jobId}`,
    status: 'succeeded',
    stopReason: 'answer',
    answer: '{}',
    steps: 2,
    toolCalls: 1,
    promptTokens: 100,
    completionTokens: 10,
    totalTokens: 110,
    costUsd: 0.001,
    error: null,
    ...overrides,
  };
}

const LONG_NOTE = 'revenue up in every store | <b>bold</b> '.repeat(5);
const RUNS = [
  run('j1', { output: { region: 'north', total: 1250.5, top: [{ product: 'widget', units: 12 }] } }),
  run('j2', { output: { region: 'south', total: 80, note: LONG_NOTE } }),
  run('j3', {
    status: 'stopped',
    stopReason: 'max_steps',
    output: null,
    error: { kind: 'model_behavior', code: 'output_missing', message: 'no valid output', retryable: false },
  }),
];
const report = buildBatchReport(BATCH, RUNS, { generatedAt: new Date('2026-11-30T03:00:00Z') });

describe('outputs in batch reports', () => {
  it('makes one column per top-level key, first seen first, each value one cut line', () => {
    const table = outputTable(report.rows)!;
    expect(table.columns).toEqual(['region', 'total', 'top', 'note']);
    expect(table.rows[0]?.cells).toEqual(['north', '1250.5', '[{"product":"widget","units":12}]', '']);
    const note = table.rows[1]?.cells?.[3] ?? '';
    expect([...note].length).toBe(OUTPUT_CELL_CHARS);
    expect(note.endsWith('…')).toBe(true);
    expect(table.rows[2]).toEqual({ index: 3, jobId: 'j3', cells: null });
  });

  it('shows the columns in Markdown, escaped so a value cannot break the table', () => {
    const markdown = renderMarkdown(report);
    expect(markdown).toContain('## Outputs');
    expect(markdown).toContain('| # | Job | region | total | top | note |');
    expect(markdown).toContain('| 1 | j1 | north | 1250.5 | \\[{"product":"widget","units":12}\\] |  |');
    expect(markdown).toMatch(/\| 2 \| j2 \| south \| 80 \| {2}\| revenue up in every store \\\| \\<b\\>bold/);
    expect(markdown).toContain('| 3 | j3 | — (no output) |');
  });

  it('shows the columns in HTML, escaped', () => {
    const html = renderHtml(report);
    expect(html).toContain('<h2>Outputs</h2>');
    expect(html).toContain('<th>region</th><th>total</th><th>top</th><th>note</th>');
    expect(html).toContain('<td>north</td><td>1250.5</td>');
    expect(html).toContain('&lt;b&gt;bold');
    expect(html).not.toContain('<b>bold');
    expect(html).toMatch(/<td colspan="4"><span class="none">— \(no output\)<\/span><\/td>/);
  });

  it('shows the columns in the terminal text', () => {
    const text = renderText(report);
    expect(text).toMatch(/Outputs:\n#\s+Job\s+region\s+total\s+top\s+note\n/);
    expect(text).toMatch(/\n3\s+j3\s+\(no output\)\n/);
  });

  it('has no Outputs table when no run has an output schema', () => {
    const plain = buildBatchReport(
      BATCH,
      RUNS.map(({ output: _output, ...rest }) => rest),
    );
    expect(outputTable(plain.rows)).toBeNull();
    expect(renderMarkdown(plain)).not.toContain('Outputs');
    expect(renderHtml(plain)).not.toContain('Outputs');
    expect(renderText(plain)).not.toContain('Outputs');
  });
});
