// The repeat detector: the same calls with the same results are fresh, then a nudge, then the end.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  observeRepeat,
  REPEAT_NUDGE,
  turnSignature,
  type RepeatState,
} from '../../../src/kernel/repeat-detector.js';

const START: RepeatState = { signature: null, count: 0 };

describe('turnSignature', () => {
  it('does not depend on the key order of the arguments, at any depth', () => {
    const a = turnSignature([{ name: 'q', args: { sql: 'x', opts: { limit: 1, offset: 2 } } }], ['r']);
    const b = turnSignature([{ name: 'q', args: { opts: { offset: 2, limit: 1 }, sql: 'x' } }], ['r']);
    expect(a).toBe(b);
  });

  it('key order does not matter inside arrays of objects either, but element order does', () => {
    const a = turnSignature([{ name: 'q', args: { rows: [{ a: 1, b: 2 }, { c: 3 }] } }], []);
    const b = turnSignature([{ name: 'q', args: { rows: [{ b: 2, a: 1 }, { c: 3 }] } }], []);
    const c = turnSignature([{ name: 'q', args: { rows: [{ c: 3 }, { a: 1, b: 2 }] } }], []);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it('differs when a name, an argument, an output or the call order differs', () => {
    const base = turnSignature([{ name: 'q', args: { id: 1 } }], ['r']);
    expect(turnSignature([{ name: 'p', args: { id: 1 } }], ['r'])).not.toBe(base);
    expect(turnSignature([{ name: 'q', args: { id: 2 } }], ['r'])).not.toBe(base);
    expect(turnSignature([{ name: 'q', args: { id: '1' } }], ['r'])).not.toBe(base);
    expect(turnSignature([{ name: 'q', args: { id: 1 } }], ['s'])).not.toBe(base);
    const two = [
      { name: 'q', args: { id: 1 } },
      { name: 'p', args: {} },
    ];
    expect(turnSignature(two, ['r', 's'])).not.toBe(turnSignature([...two].reverse(), ['r', 's']));
  });

  it('is the same for any key order (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), (args, output) => {
        const reversed = Object.fromEntries(Object.entries(args).reverse());
        expect(turnSignature([{ name: 't', args: reversed }], [output])).toBe(
          turnSignature([{ name: 't', args }], [output]),
        );
      }),
    );
  });
});

describe('observeRepeat', () => {
  it('fresh, nudge, end for the same signature three times in a row', () => {
    const sig = turnSignature([{ name: 'q', args: { id: 1 } }], ['r']);
    const first = observeRepeat(START, sig);
    expect(first).toEqual({ state: { signature: sig, count: 0 }, verdict: 'fresh' });
    const second = observeRepeat(first.state, sig);
    expect(second).toEqual({ state: { signature: sig, count: 1 }, verdict: 'nudge' });
    const third = observeRepeat(second.state, sig);
    expect(third).toEqual({ state: { signature: sig, count: 2 }, verdict: 'end' });
  });

  it('the same call with a different result resets the count', () => {
    const call = [{ name: 'q', args: { id: 1 } }];
    let state = observeRepeat(START, turnSignature(call, ['r1'])).state;
    state = observeRepeat(state, turnSignature(call, ['r1'])).state;
    const changed = observeRepeat(state, turnSignature(call, ['r2']));
    expect(changed.verdict).toBe('fresh');
    expect(changed.state.count).toBe(0);
    expect(observeRepeat(changed.state, turnSignature(call, ['r2'])).verdict).toBe('nudge');
  });

  it('A, B, A is never a repeat', () => {
    const a = turnSignature([{ name: 'q', args: { id: 1 } }], ['r']);
    const b = turnSignature([{ name: 'q', args: { id: 2 } }], ['r']);
    let state = START;
    for (const sig of [a, b, a, b, a]) {
      const next = observeRepeat(state, sig);
      expect(next.verdict).toBe('fresh');
      state = next.state;
    }
  });

  it('the nudge tells the model not to repeat the call', () => {
    expect(REPEAT_NUDGE.startsWith('\n')).toBe(true);
    expect(REPEAT_NUDGE).toMatch(/Do not repeat it/);
  });
});

describe('turnSignature of arguments already in key order', () => {
  // Arguments whose keys are sorted are their own canonical form (no copy is made): the signature must be the
  // one of the sorted copy, whatever the arguments.
  const sortedCopy = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sortedCopy);
    if (value && typeof value === 'object')
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, sortedCopy((value as Record<string, unknown>)[key])]),
      );
    return value;
  };
  const reference = (calls: { name: string; args: unknown }[], outputs: string[]) =>
    JSON.stringify([calls.map((call) => [call.name, sortedCopy(call.args)]), outputs]);

  it('is the signature of the sorted copy (property)', () => {
    const args = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 3 }).map(sortedCopy));
    fc.assert(
      fc.property(fc.array(fc.record({ name: fc.string(), args }), { maxLength: 3 }), (calls) => {
        expect(turnSignature(calls, ['x'])).toBe(reference(calls, ['x']));
        const parsed = calls.map((c) => ({ name: c.name, args: JSON.parse(JSON.stringify(c.args ?? null)) }));
        expect(turnSignature(parsed, ['x'])).toBe(reference(parsed, ['x']));
      }),
      { numRuns: 2000 },
    );
    const date = new Date(0);
    expect(turnSignature([{ name: 'a', args: { at: date } }], [])).toBe(
      reference([{ name: 'a', args: { at: date } }], []),
    );
    expect(turnSignature([{ name: 'a', args: { 10: 1, 9: 2, b: 1, a: 2 } }], [])).toBe(
      reference([{ name: 'a', args: { 10: 1, 9: 2, b: 1, a: 2 } }], []),
    );
  });
});
