// The batch report's approvals: counts of the four states and a row per call in task order, in every rendering,
// with the tool, the decider and the reason (hostile text: HTML, Markdown table breakers, terminal escapes) escaped
// and cut; a batch with thousands of calls lists a bounded number; a batch with none shows nothing; and the
// console's batch page shows the counts, linked to the approvals list when the console has one.
import { describe, expect, it } from 'vitest';
import type { Approval } from '../../../src/approvals/approval.js';
import { batchPage } from '../../../src/console/pages/batch-page.js';
import { APPROVAL_ROWS_MAX } from '../../../src/reports/approval-totals.js';
import {
  buildBatchReport,
  type BatchRecord,
  type BatchRunInput,
} from '../../../src/reports/batch-summary.js';
import { renderHtml } from '../../../src/reports/render-html.js';
import { renderMarkdown } from '../../../src/reports/render-markdown.js';
import { renderText } from '../../../src/reports/render-text.js';

const BATCH: BatchRecord = {
  batchId: 'nightly-mail',
  name: null,
  tasks: 4,
  jobIds: ['j1', 'j2', 'j3', 'j4'],
  maxCostUsd: null,
  maxTokens: null,
  state: 'running',
  summary: null,
  createdAt: new Date('2026-03-01T01:00:00Z'),
  completedAt: null,
};

function run(jobId: string, status: BatchRunInput['status'] = 'succeeded'): BatchRunInput {
  return {
    jobId,
    task: `task ${jobId}`,
    status,
    stopReason: status === 'running' ? null : 'answer',
    answer: status === 'running' ? null : 'done',
    steps: 2,
    toolCalls: 1,
    promptTokens: 100,
    completionTokens: 10,
    totalTokens: 110,
    costUsd: 0.1,
    error: null,
  } as BatchRunInput;
}

const HOSTILE_REASON =
  'no <script>alert(1)</script> | `rm` [x](http://e.vil) \u001b[31mred\u001b[0m\nsecond line';

function approval(jobId: string, fields: Partial<Approval>): Approval {
  return {
    id: `apr_${jobId}`,
    jobId,
    batchId: BATCH.batchId,
    tenant: null,
    agent: 'mailer',
    step: 1,
    callId: 'call_1',
    callKey: `${jobId}:1:0`,
    tool: 'send_email',
    arguments: { to: 'ada@example.com', body: '<img src=x onerror=alert(1)>' },
    state: 'pending',
    requestedAt: '2026-03-01T01:05:00.000Z',
    expiresAt: '2026-03-02T01:05:00.000Z',
    decidedBy: null,
    decision: null,
    reason: null,
    editedArguments: null,
    decidedAt: null,
    ...fields,
  };
}

// Given newest first, as a store might: the report lists them by task.
const APPROVALS: Approval[] = [
  approval('j4', {
    state: 'expired',
    decision: 'reject',
    reason: 'expired',
    decidedAt: '2026-03-02T01:05:00.000Z',
  }),
  approval('j3', {
    state: 'rejected',
    decision: 'reject',
    decidedBy: 'console:<b>mallory</b>',
    reason: HOSTILE_REASON,
    decidedAt: '2026-03-01T03:00:00.000Z',
  }),
  approval('j2', {
    tool: 'send_<i>email</i>|x',
    state: 'approved',
    decision: 'approve',
    decidedBy: 'alice',
    editedArguments: { to: 'bob@example.com' },
    decidedAt: '2026-03-01T02:00:00.000Z',
  }),
  approval('j1', {}),
];

const RUNS = [run('j1', 'running'), run('j2'), run('j3'), run('j4')];
const report = buildBatchReport(BATCH, RUNS, {
  generatedAt: new Date('2026-03-02T02:00:00Z'),
  approvals: APPROVALS,
});

describe('approvals in batch reports', () => {
  it('counts the four states and lists the calls in task order', () => {
    expect(report.approvals.counts).toEqual({ pending: 1, approved: 1, rejected: 1, expired: 1 });
    expect(report.approvals.total).toBe(4);
    expect(report.approvals.omitted).toBe(0);
    expect(report.approvals.rows.map((row) => [row.index, row.jobId, row.state, row.edited])).toEqual([
      [1, 'j1', 'pending', false],
      [2, 'j2', 'approved', true],
      [3, 'j3', 'rejected', false],
      [4, 'j4', 'expired', false],
    ]);
    expect(report.approvals.rows[2]).toMatchObject({
      decidedBy: 'console:<b>mallory</b>',
      decidedAt: new Date('2026-03-01T03:00:00.000Z'),
      requestedAt: new Date('2026-03-01T01:05:00.000Z'),
    });
  });

  it('Markdown: the counts and a table whose cells cannot break it or inject HTML', () => {
    const markdown = renderMarkdown(report);
    expect(markdown).toContain('## Approvals');
    expect(markdown).toContain(
      '4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired.',
    );
    expect(markdown).toContain(
      '| # | Job | Tool | State | Requested | Decided by | Decided | Reason | Edited |',
    );
    const start = markdown.indexOf('## Approvals');
    const section = markdown.slice(start, markdown.indexOf('\n## ', start));
    const rows = section.split('\n').filter((line) => /^\| [1-4] \| j\d /.test(line));
    expect(rows).toHaveLength(4);
    // Every row has exactly the header's 9 cells: no `|` of a tool or a reason split one.
    for (const row of rows) expect(row.split(/(?<!\\)\|/).length - 2).toBe(9);
    expect(rows[0]).toBe('| 1 | j1 | send\\_email | pending | 2026-03-01T01:05:00Z | — | — |  |  |');
    expect(rows[1]).toContain('| send\\_\\<i\\>email\\</i\\>\\|x | approved |');
    expect(rows[1]).toContain('| alice | 2026-03-01T02:00:00Z |  | edited |');
    expect(rows[2]).toContain('console:\\<b\\>mallory\\</b\\>');
    expect(rows[2]).toContain('no \\<script\\>alert(1)\\</script\\> \\| \\`rm\\` \\[x\\](http://e.vil)');
    expect(rows[3]).toBe(
      '| 4 | j4 | send\\_email | expired | 2026-03-01T01:05:00Z | — | 2026-03-02T01:05:00Z | expired |  |',
    );
    // The arguments are not in the report (they stay in agent_approvals).
    expect(markdown).not.toContain('onerror');
    expect(markdown).not.toMatch(/<(script|b|i)>/);
  });

  it('HTML: every cell escaped', () => {
    const html = renderHtml(report);
    expect(html).toContain('<h2>Approvals</h2>');
    expect(html).toContain('4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired');
    expect(html).not.toMatch(/<script|<b>|<i>|onerror/i);
    expect(html).toContain('console:&lt;b&gt;mallory&lt;/b&gt;');
    expect(html).toContain('send_&lt;i&gt;email&lt;/i&gt;|x');
    expect(html).toContain('no &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<td>edited</td>');
  });

  it('text: one line per call, terminal-safe', () => {
    const text = renderText(report);
    expect(text).toContain(
      'Approvals: 4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired',
    );
    expect(text).toContain('task 1 (j1) send_email: pending since 2026-03-01T01:05:00Z');
    expect(text).toContain(
      'task 2 (j2) send_<i>email</i>|x: approved by alice at 2026-03-01T02:00:00Z, arguments edited',
    );
    expect(text).toContain('task 4 (j4) send_email: expired at 2026-03-02T01:05:00Z: expired');
    const rejected = text.split('\n').find((line) => line.includes('task 3 (j3)'))!;
    expect(rejected).toContain('rejected by console:<b>mallory</b> at 2026-03-01T03:00:00Z: no <script>');
    // No escape sequence reaches the terminal, and the reason's newline did not start a line of its own.
    expect(text).not.toContain('\u001b');
    expect(text).not.toMatch(/^second line/m);
  });

  it('lists a bounded number of calls and says how many more there are', () => {
    const many = Array.from({ length: APPROVAL_ROWS_MAX + 3 }, (_, i) =>
      approval('j1', {
        id: `apr_${i}`,
        callKey: `j1:${i}:0`,
        requestedAt: new Date(Date.UTC(2026, 2, 1, 0, 0, i)).toISOString(),
      }),
    );
    const big = buildBatchReport(BATCH, RUNS, { approvals: many });
    expect(big.approvals.counts.pending).toBe(APPROVAL_ROWS_MAX + 3);
    expect(big.approvals.rows).toHaveLength(APPROVAL_ROWS_MAX);
    expect(big.approvals.omitted).toBe(3);
    expect(renderMarkdown(big)).toContain('3 more not listed here: npm run approvals -- list --batch ID.');
    expect(renderText(big)).toContain('3 more not listed here: npm run approvals -- list --batch ID');
    expect(renderHtml(big)).toContain('3 more not listed here');
  });

  it('shows nothing for a batch whose calls never waited', () => {
    const plain = buildBatchReport(BATCH, RUNS);
    expect(plain.approvals).toEqual({
      counts: { pending: 0, approved: 0, rejected: 0, expired: 0 },
      total: 0,
      rows: [],
      omitted: 0,
    });
    expect(renderMarkdown(plain)).not.toContain('Approvals');
    expect(renderHtml(plain)).not.toContain('Approvals');
    expect(renderText(plain)).not.toContain('Approvals');
  });
});

describe("the console's batch page", () => {
  it('shows the counts, each state linked to the batch’s calls when the console has the approvals pages', () => {
    const linked = batchPage(report, { approvals: { pending: 1 } });
    expect(linked).toContain(
      'Approvals: 4 calls waited for a decision: <a href="/console/approvals?state=pending&amp;batchId=nightly-mail">1 pending</a>',
    );
    expect(linked).toContain(
      '<a href="/console/approvals?state=expired&amp;batchId=nightly-mail">1 expired</a>',
    );
    const plain = batchPage(report);
    expect(plain).toContain(
      'Approvals: 4 calls waited for a decision: 1 pending, 1 approved, 1 rejected, 1 expired',
    );
    expect(plain).not.toContain('/console/approvals?');
    expect(batchPage(buildBatchReport(BATCH, RUNS))).not.toContain('Approvals:');
  });
});
