// The exact cosine recall ranks by (src/notes/cosine.ts), and a note's text as the store keeps it (noteText): data
// as given, without control characters but newline, bounded without splitting a character. Pure.
import { describe, expect, it } from 'vitest';
import { cosine } from '../../../src/notes/cosine.js';
import { NOTE_MAX_CHARS, noteText } from '../../../src/notes/note.js';

describe('cosine', () => {
  it('is 1 for the same direction, 0 for orthogonal, -1 for opposite, whatever the lengths', () => {
    expect(cosine([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(cosine([1, 0], [0, 5])).toBe(0);
    expect(cosine([1, 1], [-3, -3])).toBeCloseTo(-1, 12);
    expect(cosine([1, 0], [1, 1])).toBeCloseTo(Math.SQRT1_2, 12);
  });

  it('is null when the vectors cannot be compared', () => {
    expect(cosine([1, 0], [1, 0, 0])).toBeNull();
    expect(cosine([], [])).toBeNull();
    expect(cosine([0, 0], [1, 1])).toBeNull();
    expect(cosine([Number.MAX_VALUE, 1], [Number.MAX_VALUE, 1])).toBeNull();
  });
});

describe('noteText', () => {
  it('keeps the text, newlines included; tabs become spaces, CR LF a newline, controls go', () => {
    expect(noteText('a "quoted" <b>\r\nnext\tline\u0000\u001b[0m\u0085\u202e')).toBe(
      'a "quoted" <b>\nnext line[0m',
    );
  });

  it('holds the text to NOTE_MAX_CHARS without splitting a surrogate pair, and drops lone surrogates', () => {
    expect(noteText('x'.repeat(NOTE_MAX_CHARS + 10))).toHaveLength(NOTE_MAX_CHARS);
    const emoji = `${'x'.repeat(NOTE_MAX_CHARS - 1)}😀`;
    expect(noteText(emoji)).toBe('x'.repeat(NOTE_MAX_CHARS - 1));
    expect(noteText('a\uD800b')).toBe('ab');
  });
});
