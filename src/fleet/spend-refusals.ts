// What the spend ledger says when a scope refuses a call (why a run stopped before calling the model).
import type { BudgetStopReason } from '../kernel/budget.js';
import { formatMicroUsd } from './spend-money.js';

/** Why a scope refused a call, in the unit of the cap that binds (micro-dollars or tokens). */
export interface RefusalDetail {
  unit: 'micro_usd' | 'tokens';
  cap: number;
  spent: number;
  /** Held by the live reservations of other calls in flight (other jobs, other workers). */
  reservedByOthers: number;
  /** What the cap has left for this call: cap − spent − reserved by others (never below 0). */
  left: number;
  /** This call's worst case. */
  needed: number;
}

/**
 * What the cap had left, what the call needed, and how much of the cap other calls in flight held reserved at
 * that moment, which is why a batch whose report shows 37% spent can still refuse a call.
 */
export function refusalDetail(
  reason: BudgetStopReason,
  spent: number,
  reservedByOthers: number,
  needed: number,
  cap: number,
): RefusalDetail {
  return {
    unit: reason === 'cost_budget' ? 'micro_usd' : 'tokens',
    cap,
    spent,
    reservedByOthers,
    left: Math.max(0, cap - spent - reservedByOthers),
    needed,
  };
}

export function refusalMessage(scope: string, reason: BudgetStopReason, d: RefusalDetail): string {
  const owner = ownerOf(scope, reason);
  const f = reason === 'cost_budget' ? formatMicroUsd : formatTokens;
  return (
    `${owner[0]?.toUpperCase()}${owner.slice(1)} cannot cover this call: ${f(d.left)} of ${f(d.cap)} left, ` +
    `the call needs up to ${f(d.needed)} (${f(d.spent)} spent, ${f(d.reservedByOthers)} reserved by other ` +
    `calls in flight at that moment)`
  );
}

const formatTokens = (tokens: number) => `${tokens.toLocaleString('en-US')} tokens`;

/** Whose cap a scope is, for people: "the fleet's daily cost cap for 2026-12-01". */
function ownerOf(scope: string, reason: BudgetStopReason): string {
  const what = reason === 'cost_budget' ? 'cost' : 'token';
  if (scope.startsWith('day:')) return `the fleet's daily ${what} cap for ${scope.slice(4)}`;
  if (scope.startsWith('tenant-day:')) {
    const [date, ...tenant] = scope.slice('tenant-day:'.length).split(':');
    return `the daily ${what} cap of tenant ${tenant.join(':')} for ${date}`;
  }
  return `the ${what} budget of batch ${scope.slice(6)}`;
}
