// A note's embedding as float32 bytes (src/notes/embedding-bytes.ts): what goes in comes back at float32's
// precision, from an aligned buffer or not; bytes that cannot be an embedding are none.
import { describe, expect, it } from 'vitest';
import { embeddingBytes, embeddingOf } from '../../../src/notes/embedding-bytes.js';

describe('embedding bytes', () => {
  it('round-trips at float32 precision, 4 bytes a dimension', () => {
    const embedding = [0.1, -0.25, 1, -1, 0, 3.5e-8];
    const bytes = embeddingBytes(embedding);
    expect(bytes).toHaveLength(24);
    const back = Array.from(embeddingOf(bytes)!);
    back.forEach((value, i) => expect(value).toBeCloseTo(embedding[i]!, 6));
  });

  it('reads bytes at an offset not a multiple of 4 (a slice of the driver’s buffer)', () => {
    const bytes = embeddingBytes([0.5, -0.5, 0.25]);
    const shifted = Buffer.concat([Buffer.from([9]), bytes]).subarray(1);
    expect(shifted.byteOffset % 4).not.toBe(0);
    expect(Array.from(embeddingOf(shifted)!)).toEqual([0.5, -0.5, 0.25]);
  });

  it('is none for bytes that cannot be an embedding', () => {
    expect(embeddingOf(Buffer.alloc(0))).toBeNull();
    expect(embeddingOf(Buffer.alloc(6))).toBeNull();
  });
});
