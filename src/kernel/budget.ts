// Budget arithmetic, pure. Every model call is planned here BEFORE it is made: the prompt's estimated tokens
// plus the completion it may produce must fit in what is left of both the token and the dollar budget.
// When they do not fit at the usual max_tokens, the call asks for fewer; when not even a minimal completion
// fits, the call is not made.
import { costUsd, type ModelPrice } from './pricing.js';
import type { FlexTokens, TokenUsage } from './token-usage.js';

export type { FlexTokens, TokenUsage } from './token-usage.js';

export interface Budget {
  /** Model calls that choose actions or answer (summaries and retries are not steps). */
  maxSteps: number;
  /** Prompt plus completion tokens of every model call of the run. */
  maxTokens: number;
  maxCostUsd: number;
  /** Wall-clock time from the run's first start, in ms. */
  deadlineMs: number;
}

export interface Usage extends TokenUsage {
  totalTokens: number;
  costUsd: number;
  /** What the flex part saved against the standard tier's prices; present when some call went at flex. */
  flexSavedUsd?: number;
}

const NO_FLEX: FlexTokens = { promptTokens: 0, cachedPromptTokens: 0, completionTokens: 0 };

export type BudgetStopReason = 'token_budget' | 'cost_budget';

export type CallPlan = { ok: true; maxTokens: number } | { ok: false; reason: BudgetStopReason };

export interface CallRequirement {
  /** Conservative estimate of the prompt's tokens. */
  promptTokens: number;
  /** The completion size the call would like (LLM_MAX_TOKENS, or smaller for summaries). */
  desiredMaxTokens: number;
  /** Below this the call is pointless (a tool call or an answer needs room). */
  minCompletionTokens: number;
  /** Usage that must stay affordable after this call (the final answer turn a step must leave room for). */
  reserveAfter?: TokenUsage;
}

/** The fields of a usage with its total and its cost; the optional counts only where there are some. */
export function usageOf(tokens: TokenUsage, price: ModelPrice): Usage {
  return {
    promptTokens: tokens.promptTokens,
    completionTokens: tokens.completionTokens,
    totalTokens: tokens.promptTokens + tokens.completionTokens,
    costUsd: costUsd(price, tokens),
    ...detailsOf(tokens, price),
  };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  const sum: TokenUsage = {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
  if (a.cachedPromptTokens !== undefined || b.cachedPromptTokens !== undefined)
    sum.cachedPromptTokens = (a.cachedPromptTokens ?? 0) + (b.cachedPromptTokens ?? 0);
  if (a.reasoningTokens !== undefined || b.reasoningTokens !== undefined)
    sum.reasoningTokens = (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0);
  if (a.estimated || b.estimated) sum.estimated = true;
  if (a.flex || b.flex) {
    const x = a.flex ?? NO_FLEX;
    const y = b.flex ?? NO_FLEX;
    sum.flex = {
      promptTokens: x.promptTokens + y.promptTokens,
      cachedPromptTokens: x.cachedPromptTokens + y.cachedPromptTokens,
      completionTokens: x.completionTokens + y.completionTokens,
    };
  }
  return sum;
}

/** What `b` adds to `a` (b ⊇ a): the usage of the calls made between two readings. */
export function usageSince(a: TokenUsage, b: TokenUsage): TokenUsage {
  const negated: TokenUsage = {
    promptTokens: -a.promptTokens,
    completionTokens: -a.completionTokens,
    ...(a.cachedPromptTokens !== undefined ? { cachedPromptTokens: -a.cachedPromptTokens } : {}),
    ...(a.reasoningTokens !== undefined ? { reasoningTokens: -a.reasoningTokens } : {}),
    ...(a.flex
      ? {
          flex: {
            promptTokens: -a.flex.promptTokens,
            cachedPromptTokens: -a.flex.cachedPromptTokens,
            completionTokens: -a.flex.completionTokens,
          },
        }
      : {}),
  };
  const diff = addUsage(b, negated);
  if (!b.estimated || a.estimated) delete diff.estimated;
  return diff;
}

function detailsOf(tokens: TokenUsage, price: ModelPrice): Partial<Usage> {
  const details: Partial<Usage> = {};
  if (tokens.cachedPromptTokens) details.cachedPromptTokens = tokens.cachedPromptTokens;
  if (tokens.reasoningTokens) details.reasoningTokens = tokens.reasoningTokens;
  if (tokens.estimated) details.estimated = true;
  if (tokens.flex && (tokens.flex.promptTokens > 0 || tokens.flex.completionTokens > 0)) {
    details.flex = { ...tokens.flex };
    const { flex: _flex, ...standard } = tokens;
    details.flexSavedUsd = Math.max(0, costUsd(price, standard) - costUsd(price, tokens));
  }
  return details;
}

/**
 * The largest completion the budget allows for this call, capped at what the call wants. With `reserveAfter`,
 * the call is made only if its minimum still leaves the reserve affordable; its max_tokens is not cut by
 * the reserve, because a step that answers needs no final turn, and one that calls a tool rarely writes much.
 */
export function planCall(
  used: TokenUsage,
  budget: Budget,
  price: ModelPrice,
  need: CallRequirement,
): CallPlan {
  // A call configured smaller than the usual minimum only needs what it asks for.
  const min = Math.min(need.minCompletionTokens, need.desiredMaxTokens);
  if (need.reserveAfter) {
    const withReserve = roomFor(addUsage(used, need.reserveAfter), budget, price, need);
    if (withReserve.room < min)
      return { ok: false, reason: withReserve.tokenRoom < min ? 'token_budget' : 'cost_budget' };
  }
  const { room, tokenRoom } = roomFor(used, budget, price, need);
  if (room >= min) return { ok: true, maxTokens: room };
  return { ok: false, reason: tokenRoom < min ? 'token_budget' : 'cost_budget' };
}

function roomFor(
  used: TokenUsage,
  budget: Budget,
  price: ModelPrice,
  need: CallRequirement,
): { room: number; tokenRoom: number } {
  const tokenRoom = budget.maxTokens - used.promptTokens - used.completionTokens - need.promptTokens;
  const costRoom = completionRoomForCost(
    used,
    budget.maxCostUsd,
    price,
    need.promptTokens,
    need.desiredMaxTokens,
  );
  return { room: Math.min(need.desiredMaxTokens, tokenRoom, costRoom), tokenRoom };
}

/**
 * How many completion tokens the dollar budget still pays for after this prompt. Computed in closed form,
 * then corrected against the very function that prices the run, so float rounding can never let the
 * reported cost land a hair above the limit.
 */
function completionRoomForCost(
  used: TokenUsage,
  maxCostUsd: number,
  price: ModelPrice,
  promptTokens: number,
  cap: number,
): number {
  // The call is planned at its worst: no cache hit, the standard tier.
  const before = addUsage(used, { promptTokens, completionTokens: 0 });
  // One usage object probed at each completion size (this runs several times a step).
  const probe = { ...before };
  const completedBefore = before.completionTokens;
  if (!fitsWith(probe, completedBefore, 0, price, maxCostUsd)) return -1;
  if (price.outputPerMillion <= 0) return cap;
  const leftMicro = maxCostUsd * 1_000_000 - costUsd(price, before) * 1_000_000;
  // Capped before the correction loops: with a tiny output price the closed form can exceed 2^53, where
  // `room--` no longer changes the number.
  let room = Math.min(cap, Math.max(0, Math.floor(leftMicro / price.outputPerMillion)));
  while (room > 0 && !fitsWith(probe, completedBefore, room, price, maxCostUsd)) room--;
  while (room < cap && fitsWith(probe, completedBefore, room + 1, price, maxCostUsd)) room++;
  return room;
}

/** Whether the usage with `completion` more completion tokens still costs at most `maxCostUsd`. */
function fitsWith(
  probe: TokenUsage,
  completedBefore: number,
  completion: number,
  price: ModelPrice,
  maxCostUsd: number,
): boolean {
  probe.completionTokens = completedBefore + completion;
  return costUsd(price, probe) <= maxCostUsd;
}

/**
 * Why a call could not be made, in numbers a user can act on: what was left of the budget and what the call needed
 * at its smallest (its prompt and minimal completion at full price, plus the final turn it must leave room for).
 */
export function describeBudgetStop(
  used: TokenUsage,
  budget: Budget,
  price: ModelPrice,
  need: CallRequirement,
  reason: BudgetStopReason,
): string {
  const min = Math.min(need.minCompletionTokens, need.desiredMaxTokens);
  const call = { promptTokens: need.promptTokens, completionTokens: min };
  const needed = need.reserveAfter ? addUsage(call, need.reserveAfter) : call;
  const reserve = need.reserveAfter ? ', with room for a final answer after it' : '';
  const tokens = `${fmt(call.promptTokens)} prompt + ${fmt(call.completionTokens)} completion tokens${reserve}`;
  if (reason === 'token_budget') {
    const left = budget.maxTokens - used.promptTokens - used.completionTokens;
    return (
      `token budget: ${fmt(Math.max(0, left))} of ${fmt(budget.maxTokens)} tokens left; ` +
      `the next call needed ${fmt(needed.promptTokens + needed.completionTokens)} (${tokens})`
    );
  }
  const left = budget.maxCostUsd - costUsd(price, used);
  return (
    `cost budget: ${usd(Math.max(0, left))} of ${usd(budget.maxCostUsd)} left; ` +
    `the next call needed ${usd(costUsd(price, needed))} at worst (${tokens})`
  );
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const usd = (n: number): string => `$${n.toFixed(n >= 0.01 ? 4 : 6)}`;
