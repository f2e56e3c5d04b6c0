// Reading the approve form's textarea: the arguments as the console showed them (masked), sent back unchanged
// or edited; an edit may not keep a mask, or the call would run with the placeholder instead of the secret.
import { describe, expect, it } from 'vitest';
import { readEdit, shownArguments } from '../../../src/console/argument-edit.js';
import { parseDecisionForm } from '../../../src/console/decision-form.js';
import type { Approval } from '../../../src/approvals/approval.js';

const ARGS = {
  url: 'https://deploy:hunter2-pass@hooks.example.com/run',
  apiKey: 'sk-live-0123456789abcdefghij',
  headers: { 'x-trace': 'abc' },
  note: 'deploy now',
};
const shown = shownArguments(ARGS) as typeof ARGS;

describe('readEdit', () => {
  it('shows the arguments masked', () => {
    expect(shown.apiKey).toBe('[redacted]');
    expect(shown.url).not.toContain('hunter2-pass');
    expect(shown.note).toBe('deploy now');
  });

  it('takes the shown arguments sent back, in any layout, as no edit', () => {
    expect(readEdit(JSON.stringify(shown, null, 2), ARGS)).toEqual({ kind: 'unchanged' });
    expect(readEdit(JSON.stringify(shown), ARGS)).toEqual({ kind: 'unchanged' });
  });

  it('refuses an edit that keeps a masked value, naming where', () => {
    const keepsKey = readEdit(JSON.stringify({ ...shown, note: 'later' }), ARGS);
    expect(keepsKey).toMatchObject({ kind: 'invalid', path: 'arguments.url' });
    const fixedUrl = { ...shown, url: 'https://hooks.example.com/run', note: 'later' };
    expect(readEdit(JSON.stringify(fixedUrl), ARGS)).toMatchObject({
      kind: 'invalid',
      path: 'arguments.apiKey',
    });
    const inList = { ...fixedUrl, apiKey: 'sk-new-0123456789abcdefgh', cc: ['a', 'x [redacted] y'] };
    expect(readEdit(JSON.stringify(inList), ARGS)).toMatchObject({
      kind: 'invalid',
      path: 'arguments.cc[1]',
    });
  });

  it('takes a whole edit, and refuses what is not a JSON object', () => {
    const edit = { url: 'https://hooks.example.com/run', apiKey: 'sk-new-0123456789abcdefgh', note: 'later' };
    expect(readEdit(JSON.stringify(edit), ARGS)).toEqual({ kind: 'edited', arguments: edit });
    expect(readEdit('{"note":', ARGS)).toMatchObject({
      kind: 'invalid',
      path: 'arguments',
      message: /must be JSON/,
    });
    expect(readEdit('[1]', ARGS)).toMatchObject({ kind: 'invalid', message: 'must be a JSON object ({…})' });
    expect(readEdit('null', ARGS)).toMatchObject({ kind: 'invalid', path: 'arguments' });
    const deep = `{"a":${'['.repeat(100)}${']'.repeat(100)}}`;
    expect(readEdit(deep, ARGS)).toMatchObject({ kind: 'invalid', message: /nest at most/ });
  });
});

describe('parseDecisionForm', () => {
  const approval = { arguments: ARGS } as unknown as Approval;

  it('reads a decision, a trimmed reason and an edit only with approve', () => {
    expect(parseDecisionForm({ decision: 'reject', reason: '  no  ' }, approval)).toEqual({
      ok: true,
      input: { decision: 'reject', reason: 'no' },
    });
    expect(parseDecisionForm({ decision: 'approve', reason: ' ', arguments: ' ' }, approval)).toEqual({
      ok: true,
      input: { decision: 'approve' },
    });
    expect(parseDecisionForm({ decision: 'reject', arguments: '{}' }, approval)).toMatchObject({
      ok: false,
      issues: [{ path: 'arguments' }],
    });
    expect(parseDecisionForm({ decision: ['approve', 'reject'] }, approval)).toMatchObject({
      ok: false,
      issues: [{ path: 'decision', message: 'must be given once' }],
    });
  });
});
