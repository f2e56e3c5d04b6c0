// The run console's pieces without a browser: the timeline built from stored rows (folds, decisions, retries,
// observations apart or joined, masking), its terminal rendering, the answer's Markdown, the run-list filters,
// Bull Board's page without its link to another origin, and task job names.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { runPageOf } from '../../../producers/board-app.js';
import { noExternalResources, withoutExternalLinks } from '../../../producers/board-offline.js';
import { parseRunFilters, runsPage } from '../../../src/console/pages/runs-page.js';
import { renderTimelineText } from '../../../src/console/render-timeline-text.js';
import { runPage } from '../../../src/console/pages/run-page.js';
import { renderSafeMarkdown } from '../../../src/console/safe-markdown.js';
import { buildTimeline, type ConsoleRun, type ConsoleStep } from '../../../src/console/timeline.js';
import { taskJobName } from '../../../src/queue/task-job-name.js';

const started = new Date('2026-12-01T10:00:00Z');

function run(overrides: Partial<ConsoleRun> = {}): ConsoleRun {
  return {
    jobId: '42',
    batchId: null,
    task: 'Count the orders',
    model: 'gpt-4o',
    protocol: 'tools',
    agent: null,
    status: 'succeeded',
    stopReason: 'answer',
    stopDetail: null,
    answer: 'done',
    steps: 2,
    toolCalls: 2,
    promptTokens: 1000,
    completionTokens: 100,
    totalTokens: 1100,
    cachedPromptTokens: 0,
    reasoningTokens: 0,
    usageEstimated: false,
    costUsd: 0.01,
    prices: null,
    flexSavedUsd: 0,
    error: null,
    metadata: null,
    attempts: 1,
    startedAt: started,
    finishedAt: new Date(started.getTime() + 2500),
    updatedAt: started,
    ...overrides,
  };
}

function step(overrides: Partial<ConsoleStep> = {}): ConsoleStep {
  return {
    id: 1,
    jobId: '42',
    step: 1,
    kind: 'action',
    actions: [],
    observation: '',
    promptTokens: 500,
    completionTokens: 50,
    costUsd: 0.005,
    latencyMs: 900,
    modelCalls: 1,
    error: null,
    observations: null,
    modelLatencyMs: 700,
    events: [],
    createdAt: started,
    cachedPromptTokens: 0,
    reasoningTokens: 0,
    ...overrides,
  };
}

describe('the timeline', () => {
  it('shows a clearing of earlier results before its step, in the page and the terminal', () => {
    const timeline = buildTimeline(run({}), [
      step({
        step: 1,
        events: [{ type: 'clear', results: 2, tokens: 812, tools: ['sql_query', 'describe_table'] }],
      }),
    ]);
    const clear = timeline.entries.find((e) => e.type === 'clear');
    expect(clear).toEqual({
      type: 'clear',
      step: 1,
      results: 2,
      tokens: 812,
      tools: ['sql_query', 'describe_table'],
    });
    const line =
      'memory · 2 earlier result(s) cleared to save context (812 tokens, from sql_query, describe_table); their calls stay';
    expect(renderTimelineText(timeline)).toContain(line);
    expect(runPage(timeline)).toContain(line);
  });

  it('puts folds and decisions before their step, counts retries apart from summaries, and keeps observations apart', () => {
    const timeline = buildTimeline(run({ status: 'stopped', stopReason: 'cost_budget', answer: 'partial' }), [
      step({
        step: 2,
        kind: 'final',
        observations: ['partial'],
        modelCalls: 4,
        events: [
          {
            type: 'fold',
            messages: 4,
            summary: 'Done so far: counted.',
            byModel: true,
            modelCalls: 2,
            promptTokens: 200,
            completionTokens: 20,
            costUsd: 0.002,
          },
          { type: 'final_turn', reason: 'cost_budget', why: 'The cost budget is nearly spent.' },
        ],
      }),
      step({
        actions: [
          {
            id: 'a',
            tool: 'sql_query',
            args: { sql: 'SELECT 1' },
            ok: false,
            errorCode: 'sql_error',
            latencyMs: 5,
          },
          {
            id: 'b',
            tool: 'send_email',
            args: { to: 'a@example.com', subject: 'Hi', body: 'Line 1\nLine 2' },
            ok: true,
            errorCode: null,
            latencyMs: 9,
          },
        ],
        observation: 'Error: bad\ncolumn\nSent to a@example.com',
        observations: ['Error: bad\ncolumn', 'Sent to a@example.com'],
        cachedPromptTokens: 256,
      }),
    ]);
    expect(timeline.entries.map((e) => e.type)).toEqual([
      'model_call',
      'tool_call',
      'tool_call',
      'fold',
      'decision',
      'model_call',
      'answer',
      'decision',
    ]);
    const [first, sql, email, fold, decision, finalCall, , closing] = timeline.entries;
    expect(first).toMatchObject({ cachedPromptTokens: 256, retries: 0, latencyMs: 700 });
    expect(sql).toMatchObject({
      detail: { kind: 'sql', sql: 'SELECT 1' },
      observation: 'Error: bad\ncolumn',
      ok: false,
    });
    expect(email).toMatchObject({
      detail: { kind: 'email', to: 'a@example.com', subject: 'Hi' },
      observation: 'Sent to a@example.com',
    });
    expect(fold).toMatchObject({ summary: 'Done so far: counted.', byModel: true });
    expect(decision).toEqual({ type: 'decision', step: 2, text: 'final turn: cost budget nearly spent' });
    // 4 requests: 2 for the summary (on the fold, with their tokens and cost), the step's own, 1 made again.
    expect(fold).toMatchObject({ modelCalls: 2, promptTokens: 200, completionTokens: 20, costUsd: 0.002 });
    expect(finalCall).toMatchObject({
      calls: 2,
      retries: 1,
      promptTokens: 300,
      completionTokens: 30,
      costUsd: 0.003,
    });
    expect(closing).toMatchObject({
      step: null,
      text: 'stopped (cost_budget): the cost budget could not cover another call',
    });
    expect(timeline.run).toMatchObject({ agent: 'default', durationMs: 2500 });
  });

  it('says that no call was made when a budget stopped the run before any step', () => {
    const timeline = buildTimeline(
      run({ status: 'stopped', stopReason: 'cost_budget', steps: 0, answer: null }),
      [],
    );
    expect(timeline.entries).toEqual([
      {
        type: 'decision',
        step: null,
        text: 'stopped (cost_budget): the cost budget could not cover another call: no further call was made',
      },
    ]);
  });

  it("gives the run's own account of a budget stop, on the timeline, the page's model and the terminal", () => {
    const stopDetail =
      'the batch budget had $0.0012 left, other jobs held $0.0300 reserved; the next call needed $0.0051';
    const timeline = buildTimeline(
      run({ status: 'stopped', stopReason: 'cost_budget', steps: 0, answer: null, stopDetail }),
      [],
    );
    expect(timeline.run.stopDetail).toBe(stopDetail);
    expect(timeline.entries).toEqual([
      {
        type: 'decision',
        step: null,
        text: `stopped (cost_budget): the cost budget could not cover another call: no further call was made: ${stopDetail}`,
      },
    ]);
    expect(renderTimelineText(timeline)).toContain(`why it stopped: ${stopDetail}`);
  });

  it('reads rows written before observations were kept apart', () => {
    const one = buildTimeline(run(), [
      step({
        actions: [{ id: 'a', tool: 't', args: {}, ok: true, errorCode: null, latencyMs: 1 }],
        observation: 'a\nb',
        modelLatencyMs: null,
      }),
    ]);
    expect(one.entries[1]).toMatchObject({ observation: 'a\nb' });
    expect(one.entries[0]).toMatchObject({ latencyMs: null, stepLatencyMs: 900 });
  });

  it('masks a secret in the task on the runs list too', () => {
    const secret = 'sk-abcdefghijklmnopqrstuvwx';
    const html = runsPage([run({ task: `use ${secret} for the report` })], {});
    expect(html).toContain('for the report');
    expect(html).not.toContain(secret);
  });

  it('masks secrets in the task, arguments, observations, summaries, answers and errors', () => {
    const secret = 'sk-abcdefghijklmnopqrstuvwx';
    const timeline = buildTimeline(
      run({
        task: `use ${secret}`,
        answer: `key ${secret}`,
        status: 'failed',
        stopReason: 'error',
        error: { kind: 'tool', code: 'x', message: 'mysql://u:hunter2pw@db/x failed', retryable: false },
        metadata: { apiKey: 'k-123456' },
      }),
      [
        step({
          actions: [
            {
              id: 'a',
              tool: 'http',
              args: { url: 'https://u:hunter2pw@h/', password: 'hunter2pw' },
              ok: true,
              errorCode: null,
              latencyMs: 1,
            },
          ],
          observations: [`token=${secret}`],
          events: [
            {
              type: 'fold',
              messages: 2,
              summary: `saw ${secret}`,
              byModel: false,
              modelCalls: 0,
              promptTokens: 0,
              completionTokens: 0,
              costUsd: 0,
            },
          ],
        }),
      ],
    );
    const text = JSON.stringify(timeline) + renderTimelineText(timeline);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('hunter2pw');
    expect(text).not.toContain('k-123456');
    expect(text).toContain('[redacted]');
  });
});

describe('the terminal rendering', () => {
  it('shows cached and reasoning tokens only when there are some, and lets no control character through', () => {
    const timeline = buildTimeline(
      run({ answer: 'evil \u001b[2J\u001b]0;title\u0007 done', cachedPromptTokens: 300 }),
      [step({ kind: 'answer', observations: ['x'], reasoningTokens: 40 })],
    );
    const text = renderTimelineText(timeline);
    expect(text).toContain('1,000 prompt (300 cached) + 100 completion tokens');
    expect(text).toContain('500 prompt + 50 completion (40 reasoning) tokens');
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  });
});

describe("the answer's Markdown", () => {
  it('renders tables and formatting, and nothing that runs, loads or links', () => {
    const html = renderSafeMarkdown(
      [
        '| a | b |',
        '| - | - |',
        '| <i>1</i> | 2 |',
        '',
        '<script>alert(1)</script>',
        '<img src=x onerror=alert(1)> <iframe src="https://evil.example"></iframe>',
        '[x](javascript:alert(1)) ![y](https://evil.example/p.png) <https://evil.example/a> **bold**',
        '<a href="https://evil.example">raw</a>',
      ].join('\n'),
    );
    expect(html).toContain('<table>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).not.toMatch(/<(script|img|iframe|a|i)\b/i);
    // Attributes only as escaped text: no tag carries one.
    expect(html).not.toMatch(/<[^>]*\s(href|src|on\w+)=/i);
    expect(html).toContain('&lt;script&gt;');
  });
});

describe('run list filters', () => {
  it('parses each filter and names the field of a bad one', () => {
    const parsed = parseRunFilters({
      batch: 'b1',
      agent: 'digest',
      status: 'stopped',
      stop_reason: 'cost_budget',
      from: '2026-12-01',
      to: '2026-12-01',
    });
    expect(parsed).toEqual({
      ok: true,
      filters: {
        batch: 'b1',
        agent: 'digest',
        status: 'stopped',
        stopReason: 'cost_budget',
        from: new Date('2026-12-01T00:00:00Z'),
        to: new Date('2026-12-02T00:00:00Z'),
      },
    });
    expect(parseRunFilters({ status: 'done' })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^status: must be one of/),
    });
    expect(parseRunFilters({ stop_reason: 'x' })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^stop_reason:/),
    });
    expect(parseRunFilters({ to: '2026-02-30' })).toMatchObject({
      ok: false,
      message: 'to: must be a date, YYYY-MM-DD (UTC)',
    });
    expect(parseRunFilters({ agent: ['a', 'b'] })).toMatchObject({
      ok: false,
      message: 'agent: must be given once',
    });
    expect(parseRunFilters({ batch: 'x'.repeat(65) })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^batch: must be at most 64/),
    });
  });
});

describe('the board', () => {
  it("takes the link to Google Fonts out of Bull Board's page and keeps its own", () => {
    const require = createRequire(import.meta.url);
    const ui = dirname(require.resolve('@bull-board/ui/package.json'));
    const page = readFileSync(join(ui, 'dist', 'index.ejs'), 'utf8');
    expect(page).toContain('fonts.googleapis.com');
    const offline = withoutExternalLinks(page);
    expect(offline).not.toMatch(/https?:\/\//);
    expect(offline).toMatch(/<link href="static\/css\/main\.[0-9a-f]+\.css" rel="stylesheet">/);
    expect(withoutExternalLinks('<link rel="preconnect" href="//cdn.example">x')).toBe('x');
  });

  it('rewrites HTML pages only: JSON that holds such a link (job data) is sent as it is', async () => {
    const page = '<!doctype html><link href="https://fonts.example/x.css" rel="stylesheet"><p>hi</p>';
    const app = express();
    app.use(noExternalResources);
    app.get('/page', (_req, res) => {
      res.send(page);
    });
    app.get('/json', (_req, res) => {
      res.json({ data: page });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await (await fetch(`${base}/page`)).text()).toBe('<!doctype html><p>hi</p>');
      expect(await (await fetch(`${base}/json`)).json()).toEqual({ data: page });
    } finally {
      server.close();
    }
  });

  it('links a task job and its result job to the run page, and no other queue', () => {
    expect(runPageOf('agent-tasks', '42')).toBe('/console/runs/42');
    expect(runPageOf('agent-results', 'result-42')).toBe('/console/runs/42');
    expect(runPageOf('agent-tasks', 'a/b')).toBe('/console/runs/a%2Fb');
    expect(runPageOf('agent-batches', 'b1')).toBeNull();
  });
});

describe('task job names', () => {
  it("are the agent's name and the task's first words, one line, bounded, with credentials masked", () => {
    expect(
      taskJobName({ task: 'Find the top 3 customers by Q1 2024 sales and email each a thank-you note' }),
    ).toBe('default: Find the top 3 customers by Q1 2024…');
    expect(taskJobName({ agent: 'digest', task: 'Weekly KPIs' })).toBe('digest: Weekly KPIs');
    expect(taskJobName({ agent: 'digest' })).toBe('digest');
    expect(taskJobName({ task: 'send\nwith  password=hunter2 \u0007now' })).toBe(
      'default: send with password=[redacted] now',
    );
    expect([...taskJobName({ task: 'x'.repeat(500) })].length).toBeLessThanOrEqual(80);
  });
});

describe('a run in a tree of agents that call agents', () => {
  const children = [
    {
      jobId: 'child-1',
      agent: 'region-analyst',
      status: 'succeeded' as const,
      stopReason: 'answer' as const,
      costUsd: 0.0042,
      totalTokens: 700,
    },
    {
      jobId: 'child-<b>',
      agent: 'helper',
      status: 'stopped' as const,
      stopReason: 'cost_budget' as const,
      costUsd: 0.001,
      totalTokens: 90,
    },
  ];

  it('the run page links its parent and each child, escaped', () => {
    const html = runPage(buildTimeline(run({ parentJobId: 'parent-9' }), [], children));
    expect(html).toContain('called by the agent of run <a href="/console/runs/parent-9">parent-9</a>');
    expect(html).toContain('<h2>Agents it called</h2>');
    expect(html).toContain('<a href="/console/runs/child-1">child-1</a>');
    expect(html).toContain('child-&lt;b&gt;');
    expect(html).not.toContain('child-<b>');
  });

  it('npm run trace says who called it and lists what it called', () => {
    const text = renderTimelineText(buildTimeline(run({ parentJobId: 'parent-9' }), [], children));
    expect(text).toContain('called by job parent-9');
    expect(text).toContain('agents it called (2; each is a run: npm run trace -- --job ID):');
    expect(text).toContain('  child-1 · agent region-analyst · succeeded (answer) · 700 tokens · $0.0042');
  });

  it('a run outside a tree shows neither', () => {
    const html = runPage(buildTimeline(run(), []));
    expect(html).not.toContain('Agents it called');
    expect(html).not.toContain('called by');
  });
});

describe('a run opened with recalled notes', () => {
  const recall = {
    type: 'recall' as const,
    query: 'Count the orders <b>now</b>',
    notes: [
      { id: 'note_0123456789abcdef0123456789abcdef', text: 'orders has no column "revenue"; use amount_usd' },
      {
        id: 'note_fedcba9876543210fedcba9876543210',
        text: 'a customer wrote <script>alert(1)</script> & left',
      },
    ],
  };
  const timeline = buildTimeline(run(), [step({ step: 1, events: [recall] })]);

  it('has the notes on the timeline, said to be the fleet’s, before the step’s model call', () => {
    expect(timeline.entries.map((entry) => entry.type).slice(0, 2)).toEqual(['recall', 'model_call']);
    expect(timeline.entries[0]).toEqual({ ...recall, step: 1 });
  });

  it('the run page shows each note’s id and text, escaped: a note’s <script> is text, never a tag', () => {
    const html = runPage(timeline);
    expect(html).toContain('recalled notes (by the fleet, not the model): 2');
    expect(html).toContain('looked up for: Count the orders &lt;b&gt;now&lt;/b&gt;');
    expect(html).toContain(
      '<code class="note-id">note_0123456789abcdef0123456789abcdef</code><pre class="note-text">orders has no column &quot;revenue&quot;; use amount_usd</pre>',
    );
    expect(html).toContain('note_fedcba9876543210fedcba9876543210');
    expect(html).toContain('a customer wrote &lt;script&gt;alert(1)&lt;/script&gt; &amp; left');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('<b>now');
  });

  it('npm run trace shows them on one line, as before', () => {
    expect(renderTimelineText(timeline)).toContain(
      'decision · recalled notes (by the fleet): note_0123456789abcdef0123456789abcdef: orders has no column "revenue"; use amount_usd; note_fedcba9876543210fedcba9876543210: a customer wrote <script>alert(1)</script> & left',
    );
  });
});
