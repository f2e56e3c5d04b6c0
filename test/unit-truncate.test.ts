// Cutting text to a token or character limit, with the real tokenizers the kernel uses.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncateChars, truncateToTokens } from '../src/kernel/truncate.js';
import { tokenCounterFor } from '../src/kernel/tokens.js';

const counters = [
  ['gpt-4o', tokenCounterFor('gpt-4o')],
  ['gpt-4-turbo', tokenCounterFor('gpt-4-turbo')],
] as const;
const MARKER = / …\[cut: (\d+) of (\d+) tokens\]$/;
const CHARS_MARKER = / …\[cut: (\d+) of (\d+) chars\]$/;

describe.each(counters)('truncateToTokens (%s)', (_model, count) => {
  it('does not count a text short enough to fit whatever it holds, and such a text does fit', () => {
    let calls = 0;
    const spy = (text: string) => (calls++, count(text));
    expect(truncateToTokens('twelve chars', 36, spy)).toBe('twelve chars');
    expect(calls).toBe(0);
    // The shortcut's premise, on the real tokenizer: never more tokens than three per UTF-16 unit.
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => count(text) <= text.length * 3),
    );
  });

  it('leaves a text within the limit unchanged', () => {
    expect(truncateToTokens('', 0, count)).toBe('');
    expect(truncateToTokens('short text', 100, count)).toBe('short text');
    const exact = 'one two three four five';
    expect(truncateToTokens(exact, count(exact), count)).toBe(exact);
  });

  it('cuts a long text to the limit and says how much was cut', () => {
    const text = Array.from({ length: 400 }, (_, i) => `row ${i}: customer-${i}@example.com`).join('\n');
    const total = count(text);
    const cut = truncateToTokens(text, 100, count);
    expect(count(cut)).toBeLessThanOrEqual(100);
    const match = MARKER.exec(cut);
    expect(match).not.toBeNull();
    expect(Number(match?.[2])).toBe(total);
    const head = cut.replace(MARKER, '');
    expect(text.startsWith(head)).toBe(true);
    expect(Number(match?.[1])).toBe(total - count(head));
    // a generous share of the limit is kept, not just the marker
    expect(count(head)).toBeGreaterThan(50);
  });

  it('cuts a text far beyond the limit without counting all of it, and says how many chars were cut', () => {
    const counted: number[] = [];
    const spy = (text: string) => (counted.push(text.length), count(text));
    const text = 'row 42 | customer@example.com\n'.repeat(700_000); // 21 MB
    const started = performance.now();
    const cut = truncateToTokens(text, 400, spy);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(Math.max(...counted)).toBeLessThanOrEqual(32_768);
    expect(count(cut)).toBeLessThanOrEqual(400);
    const match = CHARS_MARKER.exec(cut);
    expect(Number(match?.[2])).toBe(text.length);
    const head = cut.replace(CHARS_MARKER, '');
    expect(text.startsWith(head)).toBe(true);
    expect(Number(match?.[1])).toBe(text.length - head.length);
    expect(count(head)).toBeGreaterThan(300);
  });

  it('never exceeds the limit, keeps a prefix and marks the cut (property)', () => {
    // Sizes drawn over the whole range (fast-check prefers small ones by default): about half the inputs must be
    // long enough to be cut, or the count below is left to chance.
    const text = fc.oneof(
      fc.string({ minLength: 100, maxLength: 3_000, size: 'max' }),
      fc.string({ unit: 'grapheme', maxLength: 1_000, size: 'max' }),
      fc
        .array(fc.constantFrom('SELECT', ' id', ',', ' name', '\n', '42', ' 😀', 'Ж', '  '), {
          maxLength: 800,
          size: 'max',
        })
        .map((parts) => parts.join('')),
    );
    let cuts = 0;
    fc.assert(
      fc.property(text, fc.integer({ min: 20, max: 300 }), (input, limit) => {
        const result = truncateToTokens(input, limit, count);
        expect(count(result)).toBeLessThanOrEqual(limit);
        if (count(input) <= limit) {
          expect(result).toBe(input);
        } else {
          cuts++;
          const match = MARKER.exec(result);
          expect(match).not.toBeNull();
          expect(Number(match?.[2])).toBe(count(input));
          expect(input.startsWith(result.replace(MARKER, ''))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    expect(cuts).toBeGreaterThan(100);
  });
});

describe('truncateChars', () => {
  it('leaves a short text unchanged', () => {
    expect(truncateChars('', 0)).toBe('');
    expect(truncateChars('abc', 3)).toBe('abc');
  });

  it('keeps the first maxChars characters and says how many were cut', () => {
    expect(truncateChars('abcdefghij', 4)).toBe('abcd …[cut: 6 chars]');
    expect(truncateChars('abc', 0)).toBe(' …[cut: 3 chars]');
  });
});
