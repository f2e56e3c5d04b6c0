// The example's made-up business: its regions, the weekly KPIs the JSON service reports and the targets the
// MCP server knows. Deterministic, so the test can check a digest against the numbers it was built from.
export const REGIONS = ['EU', 'US', 'APAC'] as const;
export type Region = (typeof REGIONS)[number];

/** An ISO week, e.g. 2026-W48. */
export const ISO_WEEK = /^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$/;

export interface WeeklyKpis {
  region: Region;
  week: string;
  revenue: number;
  orders: number;
  topProduct: string;
}

export interface RegionTargets {
  region: Region;
  weeklyRevenue: number;
  weeklyOrders: number;
}

const BASE: Record<Region, { revenue: number; orders: number; products: string[] }> = {
  EU: { revenue: 118_000, orders: 1_450, products: ['espresso machine', 'grinder', 'kettle'] },
  US: { revenue: 164_000, orders: 2_050, products: ['cold brewer', 'espresso machine', 'mugs'] },
  APAC: { revenue: 87_000, orders: 1_130, products: ['tea set', 'kettle', 'grinder'] },
};

const TARGETS: Record<Region, Omit<RegionTargets, 'region'>> = {
  EU: { weeklyRevenue: 120_000, weeklyOrders: 1_500 },
  US: { weeklyRevenue: 160_000, weeklyOrders: 2_000 },
  APAC: { weeklyRevenue: 90_000, weeklyOrders: 1_100 },
};

export function kpisFor(region: Region, week: string): WeeklyKpis {
  const n = Number(week.slice(-2));
  const base = BASE[region];
  // A wobble of -6 % … +6 % that depends on the week only: the same question always gets the same answer.
  const factor = 1 + (((n * 7) % 13) - 6) / 100;
  return {
    region,
    week,
    revenue: Math.round(base.revenue * factor),
    orders: Math.round(base.orders * factor),
    topProduct: base.products[n % base.products.length]!,
  };
}

export function targetsFor(region: Region): RegionTargets {
  return { region, ...TARGETS[region] };
}

/** Revenue as a percentage of the weekly target, one decimal: the digest's `vsTarget`. */
export function percentOfTarget(revenue: number, target: number): number {
  return Math.round((revenue / target) * 1000) / 10;
}
