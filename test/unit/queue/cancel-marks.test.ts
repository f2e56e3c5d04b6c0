// A cancel mark as stored: only a well-formed one is read, and what a cancelled result says about who cancelled.
import { describe, expect, it } from 'vitest';
import { cancelDetail, honouredMark, parseCancelMark } from '../../../src/queue/cancel-marks.js';

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

describe('honouredMark', () => {
  const own = (instance: string, text: string | null = null) => ({ text, instance });
  const marked = (instance: string, by = 'ops') => JSON.stringify({ by, at: 5, instance });

  it("honours the job's own mark, and not one left for an earlier job of its id", () => {
    expect(honouredMark(own('17', marked('17')))).toEqual({ by: 'ops', at: 5, instance: '17' });
    expect(honouredMark(own('17', marked('16')))).toBeNull();
    expect(honouredMark(own('17'))).toBeNull();
  });

  it("a child honours its parent's mark, of the parent that exists now, naming the parent", () => {
    const parent = { jobId: '42', text: marked('9', 'shell:ada'), instance: '9' };
    expect(honouredMark(own('17'), parent)).toEqual({ by: 'shell:ada', at: 5, instance: '17', parent: '42' });
    expect(honouredMark(own('17'), { ...parent, instance: '10' })).toBeNull();
    expect(honouredMark(own('17'), { ...parent, instance: null })).toBeNull();
    expect(honouredMark(own('17'), { ...parent, text: null })).toBeNull();
    // Its own mark first: who cancelled it.
    expect(honouredMark(own('17', marked('17', 'api')), parent)?.by).toBe('api');
  });
});
