// `npm run approvals` prints the model's arguments in a terminal: JSON.stringify escapes C0 controls, not DEL, C1
// controls (U+009B is CSI) or the bidirectional overrides that reorder what a person reads; the table replaces
// them, and the JSON it prints (`show`, `--json`) escapes them, reading back the same.
import { describe, expect, it } from 'vitest';
import type { Approval } from '../../../src/approvals/approval.js';
import { renderApprovalTable } from '../../../src/approvals/approvals-table.js';
import { terminalSafeJson } from '../../../src/reports/text.js';

const approval = (args: unknown): Approval => ({
  id: 'apr_0123456789abcdef0123456789abcdef',
  jobId: '42',
  batchId: null,
  tenant: null,
  agent: 'default',
  step: 1,
  callId: 'call_1',
  callKey: '42:1:1',
  tool: 'send_email',
  arguments: args,
  state: 'pending',
  requestedAt: '2026-12-06T09:00:00.000Z',
  expiresAt: '2026-12-07T09:00:00.000Z',
  decidedBy: null,
  decision: null,
  reason: null,
  editedArguments: null,
  decidedAt: null,
});

const UNSAFE = /[\u007F-\u009F\u202A-\u202E\u2066-\u2069]/;

describe('npm run approvals -- list: the arguments column', () => {
  it('shows no bidi override, DEL or C1 control from the model', () => {
    // What the approver would read as "...@example.com" is really a recipient at moc.elpmaxe-live.
    const table = renderApprovalTable([
      approval({
        to: 'ceo@\u202Emoc.elpmaxe-live\u202C.example.com',
        subject: 'x\u009B2J\u007F',
        body: 'hi',
      }),
    ]);
    expect(table).not.toMatch(UNSAFE);
  });
});

describe('npm run approvals -- show / --json', () => {
  it('writes DEL, C1 controls and bidi overrides as escapes: nothing raw reaches the terminal, the JSON reads back', () => {
    const value = approval({
      to: 'ceo@\u202Emoc.elpmaxe-live\u202C.example.com',
      subject: 'x\u009B2J\u007F',
    });
    const json = terminalSafeJson(value);
    expect(json).not.toMatch(UNSAFE);
    expect(JSON.parse(json)).toEqual(value);
  });
});
