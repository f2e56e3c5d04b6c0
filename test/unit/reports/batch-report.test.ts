// The batch report's pure parts: the summary (CONTRACT §9) against sums made by hand, tasks with no finished
// run, and the renderers with hostile text (an LLM answer holding <script>, pipes, newlines, control characters).
import { describe, expect, it } from 'vitest';
import { summarizeBatch, sumCostUsd } from '../../../src/batch/batch-summary.js';
import {
  buildBatchReport,
  type BatchRecord,
  type BatchRunInput,
  type TaskState,
} from '../../../src/reports/batch-summary.js';
import {
  niceAxis,
  renderBatchChart,
  renderChart,
  type ChartTask,
} from '../../../src/reports/render-chart.js';
import { renderHtml } from '../../../src/reports/render-html.js';
import { renderMarkdown, TASK_TABLE_HEADER } from '../../../src/reports/render-markdown.js';
import { md } from '../../../src/reports/text.js';
import { renderText } from '../../../src/reports/render-text.js';
import { parseReportArgs, reportFileStem } from '../../../src/reports/report-command.js';
import { escapeXml, formatUsd, truncate } from '../../../src/reports/text.js';

const GENERATED_AT = new Date('2026-11-30T06:00:00Z');

function batch(jobIds: string[], overrides: Partial<BatchRecord> = {}): BatchRecord {
  return {
    batchId: 'nightly-2026-11-30',
    name: 'Nightly reports',
    tasks: jobIds.length,
    jobIds,
    maxCostUsd: null,
    maxTokens: null,
    state: 'running',
    summary: null,
    createdAt: new Date('2026-11-30T01:00:00Z'),
    completedAt: null,
    ...overrides,
  };
}

function run(jobId: string, overrides: Partial<BatchRunInput> = {}): BatchRunInput {
  return {
    jobId,
    task: `Task of job ${jobId}`,
    status: 'succeeded',
    stopReason: 'answer',
    answer: `Answer of job ${jobId}`,
    steps: 3,
    toolCalls: 4,
    promptTokens: 1000,
    completionTokens: 100,
    totalTokens: 1100,
    costUsd: 0.0123,
    error: null,
    ...overrides,
  };
}

/** A deterministic pseudo-random generator, so the hand-made runs vary but the test does not. */
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const FINAL: { status: BatchRunInput['status']; stopReason: BatchRunInput['stopReason'] }[] = [
  { status: 'succeeded', stopReason: 'answer' },
  { status: 'stopped', stopReason: 'max_steps' },
  { status: 'stopped', stopReason: 'cost_budget' },
  { status: 'failed', stopReason: 'error' },
];

function handMadeRuns(count: number, seed = 7): BatchRunInput[] {
  const random = lcg(seed);
  return Array.from({ length: count }, (_, i) => {
    const prompt = Math.floor(random() * 50_000);
    const completion = Math.floor(random() * 4_000);
    const final = FINAL[Math.floor(random() * FINAL.length)] ?? FINAL[0]!;
    return run(`job-${i}`, {
      ...final,
      steps: Math.floor(random() * 8),
      toolCalls: Math.floor(random() * 12),
      promptTokens: prompt,
      completionTokens: completion,
      totalTokens: prompt + completion,
      // 10 decimals, as DECIMAL(16,10) gives them back
      costUsd: Number((random() * 0.05).toFixed(10)),
    });
  });
}

/** Balanced tags, nothing but entities after `&`, no `<` in text: enough of XML to catch a broken SVG. */
function checkWellFormed(xml: string): void {
  expect(xml.startsWith('<svg')).toBe(true);
  expect(xml.trimEnd().endsWith('</svg>')).toBe(true);
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  let roots = 0;
  while (i < xml.length) {
    const next = xml.indexOf('<', i);
    const text = xml.slice(i, next === -1 ? xml.length : next);
    expect(text).not.toMatch(/&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(text).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
    if (next === -1) break;
    tag.lastIndex = next;
    const match = tag.exec(xml);
    if (match === null) throw new Error(`not a tag at ${next}: ${xml.slice(next, next + 60)}`);
    const [whole, closing, name, attributes = '', selfClosing] = match;
    expect(attributes).not.toMatch(/&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/);
    if (closing) {
      expect(stack.pop(), `closing </${name}> at ${next}`).toBe(name);
    } else if (!selfClosing) {
      if (stack.length === 0) roots++;
      stack.push(name!);
    } else if (stack.length === 0) {
      roots++;
    }
    i = next + whole.length;
  }
  expect(stack).toEqual([]);
  expect(roots).toBe(1);
}

/** The tags of a page and their attribute names; quoted values cannot hold `"` once escaped. */
function htmlTags(html: string): { name: string; attributes: string[] }[] {
  const tags: { name: string; attributes: string[] }[] = [];
  for (const match of html.matchAll(/<([A-Za-z][\w:-]*)((?:\s+[\w:-]+(?:="[^"]*")?)*)\s*\/?>/g)) {
    const attributes = [...(match[2] ?? '').matchAll(/([\w:-]+)(?:="[^"]*")?/g)].map((m) =>
      m[1]!.toLowerCase(),
    );
    tags.push({ name: match[1]!.toLowerCase(), attributes });
  }
  return tags;
}

/** The rows of the Markdown tasks table, split into cells at the pipes that are not escaped. */
function markdownTaskRows(markdown: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(TASK_TABLE_HEADER);
  expect(start).toBeGreaterThan(-1);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

describe('batch summary', () => {
  it('equals the sum over its tasks’ results', () => {
    const runs = handMadeRuns(57);
    const report = buildBatchReport(batch(runs.map((r) => r.jobId)), runs, { generatedAt: GENERATED_AT });
    const sum = (pick: (r: BatchRunInput) => number) => runs.reduce((total, r) => total + pick(r), 0);
    expect(report.summary).toEqual({
      batchId: 'nightly-2026-11-30',
      tasks: 57,
      succeeded: runs.filter((r) => r.status === 'succeeded').length,
      stopped: runs.filter((r) => r.status === 'stopped').length,
      failed: runs.filter((r) => r.status === 'failed').length,
      usage: {
        promptTokens: sum((r) => r.promptTokens),
        completionTokens: sum((r) => r.completionTokens),
        totalTokens: sum((r) => r.totalTokens),
        costUsd: Number(sum((r) => r.costUsd).toFixed(10)),
      },
    });
    expect(Object.keys(report.summary)).toEqual([
      'batchId',
      'tasks',
      'succeeded',
      'stopped',
      'failed',
      'usage',
    ]);
    expect(Number.isInteger(report.summary.usage.totalTokens)).toBe(true);
    expect(report.summary.succeeded + report.summary.stopped + report.summary.failed).toBe(57);
    expect(report.state).toBe('completed');
    expect(report.pending).toBe(0);
    expect(report.running).toBe(0);
    expect(report.warnings).toEqual([]);
  });

  it('adds costs exactly, whatever the order of the runs', () => {
    const runs = handMadeRuns(200, 11);
    const jobIds = runs.map((r) => r.jobId);
    const forward = buildBatchReport(batch(jobIds), runs).summary;
    const backward = buildBatchReport(batch(jobIds), [...runs].reverse()).summary;
    expect(backward).toEqual(forward);
    // Float addition drifts; the summary does not.
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(sumCostUsd([0.1, 0.2])).toBe(0.3);
    expect(sumCostUsd([0.0000000001, 0.0000000001, 0.0000000001])).toBe(0.0000000003);
    expect(sumCostUsd([])).toBe(0);
    // Summed, then rounded half up to the column's 10 decimals.
    expect(sumCostUsd([0.00000000004, 0.00000000004])).toBe(0.0000000001);
    const ten = buildBatchReport(
      batch(['a', 'b', 'c']),
      ['a', 'b', 'c'].map((id) => run(id, { costUsd: 0.1 })),
    );
    expect(ten.summary.usage.costUsd).toBe(0.3);
  });

  it('shows tasks with no run as pending and running ones as running, counting neither', () => {
    const jobIds = ['1', '2', '3', '4', '5'];
    const runs = [
      run('1', { costUsd: 0.01, promptTokens: 10, completionTokens: 5, totalTokens: 15 }),
      run('2', {
        status: 'failed',
        stopReason: 'error',
        answer: null,
        costUsd: 0.002,
        error: {
          kind: 'model_api',
          code: 'http_500',
          message: 'the model endpoint answered 500',
          retryable: false,
        },
      }),
      // A running run's usage columns may hold a previous attempt's numbers: not a result yet.
      run('4', { status: 'running', stopReason: null, answer: null, costUsd: 0.5, totalTokens: 99_999 }),
    ];
    const report = buildBatchReport(batch(jobIds), runs, { generatedAt: GENERATED_AT });
    expect(report.summary).toMatchObject({ tasks: 5, succeeded: 1, stopped: 0, failed: 1 });
    expect(report.summary.usage).toEqual({
      promptTokens: 1010,
      completionTokens: 105,
      totalTokens: 1115,
      costUsd: 0.012,
    });
    expect(report.pending).toBe(2);
    expect(report.running).toBe(1);
    expect(report.state).toBe('running');
    expect(report.rows.map((row) => [row.jobId, row.status, row.finished])).toEqual([
      ['1', 'succeeded', true],
      ['2', 'failed', true],
      ['3', 'pending', false],
      ['4', 'running', false],
      ['5', 'pending', false],
    ]);
    const pending = report.rows[2]!;
    expect(pending).toMatchObject({ index: 3, task: null, costUsd: null, steps: null, answer: null });
    expect(report.rows[1]?.error).toBe('the model endpoint answered 500');
    expect(report.rows[3]).toMatchObject({ task: 'Task of job 4', costUsd: null, totalTokens: null });

    const done = buildBatchReport(batch(['1', '2']), runs);
    expect(done.state).toBe('completed');
    expect(buildBatchReport(batch([]), []).state).toBe('completed');
  });

  it('sums cached and reasoning tokens and shows them in every rendering, only where there are some', () => {
    const runs = [
      run('a', { cachedPromptTokens: 1024, reasoningTokens: 64 }),
      run('b', { cachedPromptTokens: 512 }),
      run('c'),
    ];
    const report = buildBatchReport(batch(['a', 'b', 'c']), runs, { generatedAt: GENERATED_AT });
    expect(report.summary.usage).toMatchObject({ cachedPromptTokens: 1536, reasoningTokens: 64 });
    expect(renderText(report)).toContain(
      '3,300 total (3,000 prompt, 300 completion); 1,536 cached, 64 reasoning',
    );
    expect(renderMarkdown(report)).toMatch(/\| Cached prompt tokens \| 1,536 \|/);
    expect(renderHtml(report)).toContain('Reasoning tokens');
    const flex = buildBatchReport(batch(['a']), [run('a', { flexSavedUsd: 0.0061 })], {
      generatedAt: GENERATED_AT,
    });
    expect(flex.summary.usage.flexSavedUsd).toBe(0.0061);
    expect(renderText(flex)).toContain('(the flex tier saved $0.0061)');
    expect(renderMarkdown(flex)).toContain('Saved by the flex tier (USD)');
    const plain = buildBatchReport(batch(['c']), [run('c')], { generatedAt: GENERATED_AT });
    expect(plain.summary.usage.cachedPromptTokens).toBeUndefined();
    expect(renderMarkdown(plain)).not.toContain('Cached prompt tokens');
  });

  it('says why a budget stopped a task, in the Markdown and the HTML', () => {
    const why = 'cost budget: $0.000210 of $0.0500 left; the next call needed $0.0034 at worst (…)';
    const runs = [run('a', { status: 'stopped', stopReason: 'cost_budget', answer: null, stopDetail: why })];
    const report = buildBatchReport(batch(['a']), runs, { generatedAt: GENERATED_AT });
    expect(report.rows[0]?.stopDetail).toBe(why);
    expect(renderMarkdown(report)).toContain('Why it stopped: cost budget: $0.000210 of $0.0500 left');
    expect(renderHtml(report)).toContain('<div class="why">Why it stopped: cost budget: $0.000210');
  });

  it('one tally: the summary from results (aggregator, client) equals the one from run rows (report)', () => {
    const costs = [0.1, 0.2, 0.0000000001, 0.30000000000000004, 0.0123];
    const runs = costs.map((costUsd, i) => run(String(i + 1), { costUsd, cachedPromptTokens: i * 100 }));
    const fromRows = buildBatchReport(batch(runs.map((r) => r.jobId)), runs).summary;
    const results = runs.map((r) => ({
      jobId: r.jobId,
      status: 'succeeded' as const,
      stopReason: 'answer' as const,
      answer: r.answer,
      steps: r.steps,
      toolCalls: r.toolCalls,
      usage: {
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
        totalTokens: r.totalTokens,
        costUsd: r.costUsd,
        cachedPromptTokens: r.cachedPromptTokens,
      },
      error: null,
    }));
    const fromResults = summarizeBatch('nightly-2026-11-30', runs.length, results);
    expect(fromResults).toEqual(fromRows);
    // Exact: floats added one by one would give 0.6123000001000001.
    expect(fromResults.usage.costUsd).toBe(0.6123000001);
  });

  it('warns about runs outside the job ids, duplicate ids and a stored summary that disagrees', () => {
    const report = buildBatchReport(
      batch(['a', 'b', 'a'], {
        tasks: 3,
        state: 'completed',
        summary: { batchId: 'nightly-2026-11-30', tasks: 2, succeeded: 2, stopped: 0, failed: 0, usage: {} },
      }),
      [run('a'), run('b'), run('stray', { costUsd: 1 })],
    );
    expect(report.summary.tasks).toBe(2);
    expect(report.summary.usage.costUsd).toBe(0.0246);
    expect(report.warnings).toHaveLength(4);
    expect(report.warnings.join('\n')).toMatch(/twice/);
    expect(report.warnings.join('\n')).toMatch(/says 3 tasks/);
    expect(report.warnings.join('\n')).toMatch(/stray/);
    expect(report.warnings.join('\n')).toMatch(/summary stored with the batch differs/);

    const agreeing = buildBatchReport(batch(['a', 'b']), [run('a'), run('b')]);
    const again = buildBatchReport(batch(['a', 'b'], { summary: agreeing.summary }), [run('a'), run('b')]);
    expect(again.warnings).toEqual([]);
  });

  it('lists the emails not known to be delivered, in task order, in every rendering', () => {
    const jobIds = ['a', 'b', 'c'];
    const doubt = (jobId: string, state: 'uncertain' | 'not_delivered' | 'pending') => ({
      jobId,
      callKey: `${jobId}:2:1`,
      recipient: `${jobId}@example.com`,
      messageId: `<${jobId}@agent-fleet.local>`,
      state,
      note: state === 'uncertain' ? 'the delivery lookup failed | <b>503</b>' : null,
    });
    const report = buildBatchReport(
      batch(jobIds),
      jobIds.map((id) => run(id)),
      {
        generatedAt: GENERATED_AT,
        emails: [doubt('c', 'not_delivered'), doubt('a', 'uncertain'), doubt('elsewhere', 'pending')],
      },
    );
    expect(report.emails.map((e) => [e.index, e.jobId, e.state])).toEqual([
      [1, 'a', 'uncertain'],
      [3, 'c', 'not_delivered'],
    ]);
    // The summary stays the sum over the results.
    expect(report.summary.succeeded).toBe(3);
    expect(renderText(report)).toMatch(/^Email: +task 1 \(a\) uncertain, to a@example\.com .*lookup failed/m);
    expect(renderText(report)).toMatch(/^Email: +task 3 \(c\) not delivered, to c@example\.com/m);
    const markdown = renderMarkdown(report);
    expect(markdown).toMatch(/## Emails not known to be delivered/);
    expect(markdown).toContain('| 3 | c | not delivered | c@example.com |');
    expect(markdown).not.toContain('<b>');
    const html = renderHtml(report);
    expect(html).toMatch(/<h2>Emails not known to be delivered<\/h2>/);
    expect(html).toContain('&lt;b&gt;503&lt;/b&gt;');
    expect(renderMarkdown(buildBatchReport(batch(jobIds), []))).not.toMatch(/Emails not known/);
  });

  it('refuses usage that no run can have', () => {
    expect(() => buildBatchReport(batch(['a']), [run('a', { costUsd: -1 })])).toThrow(/costUsd/);
    expect(() => buildBatchReport(batch(['a']), [run('a', { promptTokens: 1.5 })])).toThrow(/promptTokens/);
    expect(() => buildBatchReport(batch(['a']), [run('a', { costUsd: Number.NaN })])).toThrow(/costUsd/);
  });
});

describe('HTML report', () => {
  const HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)> & "quotes" \'single\'';

  it('escapes every text from the batch, an LLM answer holding <script> included', () => {
    const runs = [
      run('1', { answer: HOSTILE, task: `Summarize ${HOSTILE}` }),
      run('2', { answer: `short ${HOSTILE}`.repeat(20) }),
      run('3', {
        status: 'failed',
        stopReason: 'error',
        answer: null,
        error: {
          kind: 'tool',
          code: 'x',
          message: HOSTILE,
          retryable: false,
        },
      }),
    ];
    const report = buildBatchReport(
      batch(['1', '2', '3', '<b>4</b>'], { batchId: 'b<script>', name: HOSTILE, maxCostUsd: 1 }),
      runs,
      { generatedAt: GENERATED_AT },
    );
    const html = renderHtml(report);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    expect(html).not.toContain('onerror=alert(1)>');
    expect(html).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
    expect(html).toContain('&lt;b&gt;4&lt;/b&gt;');
    // Self-contained: the chart is inline, nothing is fetched, and scripts are forbidden anyway.
    expect(html).toContain('<svg xmlns="http://www.w3.org/2000/svg"');
    expect(html).toContain("default-src 'none'");
    expect(html).not.toMatch(/@import|url\(/i);
    const tags = htmlTags(html);
    const names = new Set(tags.map((tag) => tag.name));
    for (const name of ['script', 'img', 'iframe', 'object', 'embed', 'link', 'a', 'base', 'form']) {
      expect(names.has(name), `<${name}>`).toBe(false);
    }
    const attributes = new Set(tags.flatMap((tag) => tag.attributes));
    for (const attribute of attributes) expect(attribute).not.toMatch(/^(?:on|src$|href$|xlink:href$)/i);
    // Every task is a row, and the totals are shown.
    expect(html.match(/<tr><td class="num">/g)).toHaveLength(4);
    expect(html).toContain('$0.0369');
  });

  it('keeps the page well-formed with an answer that tries to close its elements', () => {
    const report = buildBatchReport(batch(['1']), [
      run('1', { answer: '</pre></details></td></tr></table>x' }),
    ]);
    const html = renderHtml(report);
    expect(html).not.toContain('</pre></details></td></tr></table>x');
    expect(html).toContain('&lt;/pre&gt;&lt;/details&gt;');
  });
});

describe('chart', () => {
  function tasks(count: number): ChartTask[] {
    const statuses: TaskState[] = ['succeeded', 'stopped', 'failed', 'running', 'pending'];
    return Array.from({ length: count }, (_, i) => {
      const status = statuses[i % statuses.length]!;
      const finished = status !== 'running' && status !== 'pending';
      return {
        index: i + 1,
        jobId: `job-${i}`,
        task:
          i % 7 === 0
            ? `Task <script>alert(${i})</script> & "more" \u0001\u001b[31m ${'long '.repeat(40)}`
            : `Task ${i}`,
        status,
        costUsd: finished ? (i % 13) / 1000 : null,
        steps: finished ? i % 9 : null,
        toolCalls: finished ? i % 4 : null,
      };
    });
  }

  it.each([0, 1, 200])('is well-formed SVG with %i tasks', (count) => {
    const svg = renderChart(tasks(count), { title: 'Batch <x> & "y"' });
    checkWellFormed(svg);
    expect(svg).not.toContain('<script');
    const rows = svg.match(/<g>\n<title>/g) ?? [];
    expect(rows).toHaveLength(count);
    // One cost bar (in the panel at x=316) and one steps bar (at x=720) per finished task (0 px wide for a zero).
    const finished = tasks(count).filter((task) => task.costUsd !== null);
    const costBars = svg.match(/<rect x="316" y="[\d.]+" width="[\d.]+" height="10"/g) ?? [];
    const stepBars = svg.match(/<rect x="720" y="[\d.]+" width="[\d.]+" height="10"/g) ?? [];
    expect(costBars).toHaveLength(finished.length);
    expect(stepBars).toHaveLength(finished.length);
    const height = Number(/height="(\d+)"/.exec(svg)?.[1]);
    expect(height).toBeGreaterThan(count * 16);
  });

  it('cuts long labels and keeps bars inside their panel', () => {
    const svg = renderChart([
      { index: 1, jobId: 'a', task: 'x'.repeat(500), status: 'succeeded', costUsd: 15, steps: 40 },
      { index: 2, jobId: 'b', task: 'tiny', status: 'succeeded', costUsd: 0.0000001, steps: 1 },
    ]);
    checkWellFormed(svg);
    const labels = [...svg.matchAll(/<text x="16" y="[\d.]+" fill="#212121">([^<]*)<\/text>/g)].map(
      (m) => m[1],
    );
    expect(labels).toEqual(['1. ' + 'x'.repeat(29) + '…', '2. tiny']);
    // The tooltip keeps more of the task, still cut.
    expect(svg).toContain('x'.repeat(200));
    expect(svg).not.toContain('x'.repeat(301));
    const widths = (x: number) =>
      [...svg.matchAll(new RegExp(`<rect x="${x}" y="[\\d.]+" width="([\\d.]+)" height="10"`, 'g'))].map(
        (m) => Number(m[1]),
      );
    // The largest value fills its panel up to the room kept for its value label, no further.
    expect(widths(316)).toEqual([276, 1]);
    expect(widths(720)).toEqual([154, 3.9]);
    // The tiny cost still has a visible bar.
    expect(svg).toMatch(/width="1" height="10"/);
  });

  it('renders a whole report’s chart with all-zero costs', () => {
    const report = buildBatchReport(batch(['1']), [run('1', { costUsd: 0, steps: 0 })]);
    checkWellFormed(renderBatchChart(report));
  });

  it('picks round axis maxima', () => {
    expect(niceAxis(0.0475, false)).toEqual({ max: 0.06, step: 0.02 });
    expect(niceAxis(9, true)).toEqual({ max: 10, step: 5 });
    expect(niceAxis(0, true)).toEqual({ max: 1, step: 1 });
    expect(niceAxis(3, true)).toEqual({ max: 3, step: 1 });
  });
});

describe('Markdown report', () => {
  it('has one table row per task, pending ones included, whatever the texts hold', () => {
    const jobIds = ['1', '2', '3', '4', '5', '6'];
    const runs = [
      run('1', { answer: 'a | b | c\nsecond line\n| --- |' }),
      run('2', { task: 'pipes | and\nnewlines\r\n| x |', answer: '```\nfenced\n```' }),
      run('3', { status: 'stopped', stopReason: 'cost_budget', answer: null }),
      run('4', { status: 'running', stopReason: null, answer: null }),
    ];
    const report = buildBatchReport(batch(jobIds), runs, { generatedAt: GENERATED_AT });
    const markdown = renderMarkdown(report, { chartFile: 'nightly.svg' });
    const rows = markdownTaskRows(markdown);
    expect(rows).toHaveLength(6);
    for (const row of rows) expect(row).toHaveLength(11);
    expect(rows.map((row) => row[3])).toEqual([
      'succeeded',
      'succeeded',
      'stopped',
      'running',
      'pending',
      'pending',
    ]);
    expect(markdown).toContain('![Cost and steps per task](nightly.svg)');
    expect(markdown).toContain('| Cost (USD) | **$0.0369** |');
    // The fenced answer cannot be closed by the backticks it holds.
    expect(markdown).toContain('````text\n```\nfenced\n```\n````');
  });

  it('escapes inline Markdown and HTML', () => {
    expect(md('<script>*x*</script> [a](b) | `c` & _d_')).toBe(
      '\\<script\\>\\*x\\*\\</script\\> \\[a\\](b) \\| \\`c\\` \\& \\_d\\_',
    );
    const report = buildBatchReport(batch(['1']), [run('1', { answer: '<script>alert(1)</script>' })]);
    const table = renderMarkdown(report).split('## Answers')[0] ?? '';
    expect(table).not.toContain('<script>');
  });

  it('has a table for 200 tasks', () => {
    const runs = handMadeRuns(200);
    const report = buildBatchReport(batch(runs.map((r) => r.jobId)), runs);
    expect(markdownTaskRows(renderMarkdown(report))).toHaveLength(200);
  });
});

describe('text report', () => {
  it('prints a table and the totals, with no control characters', () => {
    const runs = [run('1', { task: 'evil \u001b[2J\u001b[31mred\u0007 task' }), run('2', { costUsd: 0.5 })];
    const report = buildBatchReport(batch(['1', '2', '3'], { maxCostUsd: 2 }), runs);
    const text = renderText(report);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(text).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/);
    expect(text).toContain('Cost:      $0.5123 (25.6% of the $2.00 budget)');
    expect(text).toContain('Tokens:    2,200 total (2,000 prompt, 200 completion)');
    expect(text).toContain('3 (2 succeeded, 0 stopped, 0 failed, 0 running, 1 pending)');
    expect(text.split('\n').filter((line) => /^\s*\d+\s{2}/.test(line))).toHaveLength(3);
  });
});

describe('helpers', () => {
  it('formats dollars with the decimals they need', () => {
    expect(formatUsd(0)).toBe('$0.00');
    expect(formatUsd(0.0436)).toBe('$0.0436');
    expect(formatUsd(12.5)).toBe('$12.50');
    expect(formatUsd(1234.0000000001)).toBe('$1,234.0000000001');
    expect(formatUsd(0.0000000001)).toBe('$0.0000000001');
  });

  it('cuts text without splitting emoji, and escapes XML', () => {
    expect(truncate('👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦', 2)).toBe('👩‍👩‍👧‍👦…');
    expect(truncate('short', 10)).toBe('short');
    expect(escapeXml('a\u0000<b>&"\'\uD800')).toBe('a\uFFFD&lt;b&gt;&amp;&quot;&#39;\uFFFD');
  });

  it('names report files after the batch id, safely', () => {
    expect(reportFileStem('nightly-2026-11-30')).toBe('nightly-2026-11-30');
    expect(reportFileStem('demo-2026-11-30T01:02:03')).toBe('demo-2026-11-30T01:02:03');
    const evil = reportFileStem('../../etc/passwd');
    expect(evil).not.toContain('/');
    expect(evil.startsWith('.')).toBe(false);
    expect(reportFileStem('a/b')).not.toBe(reportFileStem('a_b'));
  });

  it('parses the command line', () => {
    expect(parseReportArgs(['--batch', 'b1'])).toEqual({ kind: 'run', batchId: 'b1', outDir: 'reports' });
    expect(parseReportArgs(['--batch=b1', '--out', '/tmp/x'])).toEqual({
      kind: 'run',
      batchId: 'b1',
      outDir: '/tmp/x',
    });
    expect(parseReportArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseReportArgs([])).toMatchObject({ kind: 'error' });
    expect(parseReportArgs(['--batch'])).toMatchObject({ kind: 'error' });
    expect(parseReportArgs(['--batch', 'b1', '--bogus'])).toMatchObject({ kind: 'error' });
    expect(parseReportArgs(['--batch', 'b1', 'extra'])).toMatchObject({ kind: 'error' });
    expect(parseReportArgs(['--batch', 'é'])).toMatchObject({ kind: 'error' });
    expect(parseReportArgs(['--batch', 'x'.repeat(65)])).toMatchObject({ kind: 'error' });
  });
});

describe('the runs a task called', () => {
  it('are listed under it, escaped, never counted, and a looping parent_job_id is walked once', () => {
    const hostile = 'child-<img src=x onerror=alert(1)>|`\x1b[31m';
    const report = buildBatchReport(
      batch(['1', '2']),
      [
        run('1'),
        run('2'),
        run(hostile, { parentJobId: '1', agent: 'a<b>|c', costUsd: 0.004, stopReason: 'cost_budget' }),
        run('loop-a', { parentJobId: 'loop-b' }),
        run('loop-b', { parentJobId: 'loop-a' }),
      ],
      { generatedAt: GENERATED_AT },
    );
    expect(report.summary.tasks).toBe(2);
    expect(report.summary.usage.costUsd).toBeCloseTo(0.0246, 9);
    expect(report.rows[0]!.called?.rows).toEqual([
      expect.objectContaining({ jobId: hostile, agent: 'a<b>|c', depth: 1, stopReason: 'cost_budget' }),
    ]);
    expect(report.rows[1]!.called).toBeUndefined();
    const markdown = renderMarkdown(report);
    expect(markdown).toContain(`|  | ↳ child-\\<img src=x onerror=alert(1)\\>\\|`);
    expect(markdown).toContain(` | agent ${md('a<b>|c')} | succeeded | cost_budget |`);
    expect(markdown).not.toMatch(/(?<!\\)<img/);
    const html = renderHtml(report);
    expect(html).toContain(`↳ ${escapeXml(hostile)}</td>`);
    expect(html).not.toContain('<img');
    expect(renderText(report)).not.toContain('\x1b');
  });
});
