// Cosine similarity of two embeddings, exact, in the worker: recall over an agent's notes scans at most a few
// thousand vectors (docs/notes.md), which a plain loop does in milliseconds.

/** The cosine of the angle between a and b, in [-1, 1]; null when their lengths differ or either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  if (a.length !== b.length || a.length === 0) return null;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  if (normA === 0 || normB === 0) return null;
  const value = dot / Math.sqrt(normA * normB);
  if (!Number.isFinite(value)) return null;
  return Math.max(-1, Math.min(1, value));
}
