// The line `enqueue --wait` prints when its task parks for approvals: the tools and approval ids, the earliest
// expiry, and how to decide; nothing for any other progress.
import { describe, expect, it } from 'vitest';
import { approvalWaitLine } from '../../../producers/approval-wait-line.js';

const call = (n: number, tool = 'send_email') => ({
  id: `apr_${String(n).padStart(32, '0')}`,
  tool,
  arguments: { to: `c${n}@example.com` },
  expiresAt: `2026-12-0${8 - Math.min(n, 7)}T10:00:00.000Z`,
});

describe('approvalWaitLine', () => {
  it('names each waiting call, the earliest expiry and the command that decides', () => {
    const line = approvalWaitLine('42', {
      status: 'awaiting_approval',
      step: 2,
      approvals: [call(1), call(2, 'post_invoice')],
    });
    expect(line).toBe(
      `job 42: waiting for approval until 2026-12-06T10:00:00.000Z: send_email (${call(1).id}), ` +
        `post_invoice (${call(2).id}); decide with npm run approvals -- approve ID, or npm run approvals -- ` +
        'reject ID --reason "…"',
    );
  });

  it('lists five calls and counts the rest', () => {
    const line = approvalWaitLine('7', {
      status: 'awaiting_approval',
      approvals: [1, 2, 3, 4, 5, 6, 7].map((n) => call(n)),
    });
    expect(line).toContain(call(5).id);
    expect(line).not.toContain(call(6).id);
    expect(line).toContain('and 2 more');
  });

  it('still says the job waits when the calls are not listed', () => {
    expect(approvalWaitLine('9', { status: 'awaiting_approval' })).toBe(
      'job 9: waiting for approval (npm run approvals -- list --job 9)',
    );
  });

  it('is null for any other progress', () => {
    for (const progress of [
      null,
      0,
      'x',
      { step: 1 },
      { status: 'running' },
      [{ status: 'awaiting_approval' }],
    ])
      expect(approvalWaitLine('1', progress)).toBeNull();
  });
});
