// boundedJson: the same text as JSON.stringify while it fits, a prefix of it when it does not.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedJson } from '../src/kernel/bounded-json.js';

describe('boundedJson', () => {
  it('writes what JSON.stringify writes, whatever the value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(boundedJson(value, 1_000_000)).toEqual({ text: JSON.stringify(value), complete: true });
      }),
      { numRuns: 500 },
    );
    const odd = {
      a: undefined,
      f: () => 1,
      d: new Date(0),
      list: [undefined, () => 1, NaN],
      nested: { toJSON: () => 'x' },
    };
    expect(boundedJson(odd, 1_000).text).toBe(JSON.stringify(odd));
  });

  it('stops at the limit with a prefix of the full text (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 200 }), (value, maxChars) => {
        const full = JSON.stringify(value);
        const result = boundedJson(value, maxChars);
        if (full.length <= maxChars) expect(result).toEqual({ text: full, complete: true });
        else expect(result).toEqual({ text: full.slice(0, maxChars), complete: false });
      }),
      { numRuns: 500 },
    );
  });

  it('cuts a long string before quoting it', () => {
    const result = boundedJson({ text: 'z'.repeat(10_000_000) }, 20);
    expect(result).toEqual({ text: '{"text":"zzzzzzzzzzz', complete: false });
  });
});
