// A note's embedding as the store keeps it: float32, little-endian, 4 bytes a dimension. A similarity recall reads
// up to maxScan of them at a run's start; as JSON, parsing 1,000 of 1,536 dimensions took about 240 ms of the
// worker's CPU, as bytes it is a view over the buffer the driver read (bench/notes-recall.ts). Float32 is what the
// embedding endpoints return in their binary forms, and plenty for a cosine.

/** The bytes of an embedding (finite numbers, checked by the caller). */
export function embeddingBytes(embedding: readonly number[]): Buffer {
  const bytes = Buffer.alloc(embedding.length * 4);
  embedding.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes;
}

/**
 * The embedding those bytes hold: a view over them where they are aligned, else over an aligned copy (one
 * memcpy: the driver's buffers are slices at any offset); null when they cannot be one (a length not a multiple
 * of 4, none at all).
 */
export function embeddingOf(bytes: Uint8Array): Float32Array | null {
  if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return null;
  if (!LITTLE_ENDIAN) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return Float32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true));
  }
  if (bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const aligned = new Uint8Array(bytes.byteLength);
  aligned.set(bytes);
  return new Float32Array(aligned.buffer);
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
