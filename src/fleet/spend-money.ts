// The spend ledger's arithmetic: money in integer micro-dollars, worst cases and actuals rounded UP, caps DOWN,
// so float drift can never let the ledger pass a cap (the price is an overcount below $0.000001 per call). The
// conversion works on the amount's decimal digits, so a round amount such as $0.57 is exactly 570000.

export const MICRO_USD_PER_USD = 1_000_000;

/**
 * Largest amount (micro-dollars or tokens) one call may book. Lua prints numbers with 14 significant digits,
 * so every figure a script handles stays below 10^14; this bound ($10M, 10^13 tokens) is far above any call.
 */
const MAX_AMOUNT = 1e13;

/** Rounds a dollar amount up to whole micro-dollars (worst cases, actuals). */
export function microUsdUp(usd: number): number {
  return checkedAmount(toMicroUsd(finiteNonNegative(usd, 'amount in USD'), 'up'), 'amount in USD');
}

/** Rounds a dollar cap down to whole micro-dollars. */
export function microUsdDown(usd: number): number {
  return Math.min(toMicroUsd(finiteNonNegative(usd, 'cap in USD'), 'down'), Number.MAX_SAFE_INTEGER);
}

/** Rounds a token count up (worst cases, actuals). */
export function tokensUp(tokens: number): number {
  return checkedAmount(Math.ceil(finiteNonNegative(tokens, 'token count')), 'token count');
}

/** Rounds a token cap down. */
export function capTokens(tokens: number): number {
  return Math.min(Math.floor(finiteNonNegative(tokens, 'token cap')), Number.MAX_SAFE_INTEGER);
}

/** Micro-dollars for people: `$0.57`, `$0.000123`. */
export function formatMicroUsd(micro: number): string {
  return `$${(micro / MICRO_USD_PER_USD).toFixed(6).replace(/0{1,4}$/, '')}`;
}

/**
 * Whole micro-dollars of an amount, computed exactly from its shortest decimal form (the digits JavaScript prints
 * for it): 0.57 is 570000, not the 569999.9999999999 that `0.57 * 1e6` gives; 0.0000029 is 2.9, so 3 rounded up
 * and 2 rounded down.
 */
function toMicroUsd(usd: number, direction: 'up' | 'down'): number {
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(usd.toString());
  if (!match) throw new RangeError(`not an amount in USD: ${usd}`);
  const integer = match[1] ?? '';
  const digits = integer + (match[2] ?? '');
  // How many of the digits come before the micro-dollar point.
  const point = integer.length + Number(match[3] ?? 0) + 6;
  const whole = point <= 0 ? 0 : Number(digits.slice(0, point).padEnd(point, '0'));
  const fraction = point <= 0 ? digits : digits.slice(point);
  return direction === 'up' && /[1-9]/.test(fraction) ? whole + 1 : whole;
}

function finiteNonNegative(value: number, what: string): number {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${what} must be a finite number >= 0: ${value}`);
  return value;
}

function checkedAmount(value: number, what: string): number {
  if (value > MAX_AMOUNT) throw new RangeError(`${what} is too large for the spend ledger: ${value}`);
  return value;
}
