// A cancel mark as stored: only a well-formed one is read, and what a cancelled result says about who cancelled.
import { describe, expect, it } from 'vitest';
import { cancelDetail, parseCancelMark } from '../../../src/queue/cancel-marks.js';

describe('parseCancelMark', () => {
  it('reads a mark, with its parent when it has one', () => {
    expect(parseCancelMark('{"by":"ops","at":5,"instance":"17"}')).toEqual({
      by: 'ops',
      at: 5,
      instance: '17',
    });
    expect(parseCancelMark('{"by":"ops","at":5,"instance":"17","parent":"42"}')).toEqual({
      by: 'ops',
      at: 5,
      instance: '17',
      parent: '42',
    });
  });

  it('reads nothing from a missing key, text that is not JSON, or a shape that is not a mark', () => {
    for (const text of [null, '', 'ops', 'null', '[]', '{"by":"ops","at":"5","instance":"17"}', '{"by":1}'])
      expect(parseCancelMark(text), String(text)).toBeNull();
  });

  it('drops a parent that is not text', () => {
    expect(parseCancelMark('{"by":"ops","at":5,"instance":"17","parent":42}')).toEqual({
      by: 'ops',
      at: 5,
      instance: '17',
    });
  });
});

describe('cancelDetail', () => {
  it('says who and when, and the parent a child was cancelled with', () => {
    const at = Date.parse('2025-01-02T03:04:05.000Z');
    expect(cancelDetail({ by: 'ops', at, instance: '1' })).toBe(
      'cancelled by ops at 2025-01-02T03:04:05.000Z',
    );
    expect(cancelDetail({ by: 'shell:ada', at, instance: '1', parent: '42' })).toBe(
      'cancelled by shell:ada at 2025-01-02T03:04:05.000Z (its parent job 42 was cancelled)',
    );
  });
});
