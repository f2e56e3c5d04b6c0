// Label values that come from tasks or configuration (tenants, models) rather than a fixed list: the first
// `max` distinct values seen keep their own label, any later one is counted as `other`, so a fleet with many
// tenants cannot grow Prometheus's series without bound.
export const DEFAULT_MAX_LABEL_VALUES = 100;

export class FirstSeenLabels {
  private readonly seen = new Set<string>();

  constructor(
    private readonly other: string,
    private readonly max: number = DEFAULT_MAX_LABEL_VALUES,
  ) {
    if (!Number.isInteger(max) || max < 0) throw new RangeError('max must be an integer >= 0');
  }

  /** `value` itself while it is among the first `max` seen, else the `other` label. */
  label(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max || value === this.other) return this.other;
    this.seen.add(value);
    return value;
  }
}
