export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return NaN;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** (max − min) / median: how far apart the repetitions of one run were. */
export const spread = (values: readonly number[]): number =>
  values.length < 2 ? 0 : (Math.max(...values) - Math.min(...values)) / median(values);
