// Budget arithmetic, pure. Every model call is planned here BEFORE it is made: the prompt's estimated tokens
// plus the completion it may produce must fit in what is left of both the token and the dollar budget.
// When they do not fit at the usual max_tokens, the call asks for fewer; when not even a minimal completion
// fits, the call is not made.
import { costUsd, type ModelPrice } from '../llm/pricing.js';

export interface Budget {
  /** Model calls that choose actions or answer (summaries and retries are not steps). */
  maxSteps: number;
  /** Prompt plus completion tokens of every model call of the run. */
  maxTokens: number;
  maxCostUsd: number;
  /** Wall-clock time from the run's first start, in ms. */
  deadlineMs: number;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface Usage extends TokenUsage {
  totalTokens: number;
  costUsd: number;
}

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

export function usageOf(tokens: TokenUsage, price: ModelPrice): Usage {
  return {
    promptTokens: tokens.promptTokens,
    completionTokens: tokens.completionTokens,
    totalTokens: tokens.promptTokens + tokens.completionTokens,
    costUsd: costUsd(price, tokens.promptTokens, tokens.completionTokens),
  };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
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
  const prompt = used.promptTokens + promptTokens;
  const fits = (completion: number) =>
    costUsd(price, prompt, used.completionTokens + completion) <= maxCostUsd;
  if (!fits(0)) return -1;
  if (price.outputPerMillion <= 0) return cap;
  const leftMicro =
    maxCostUsd * 1_000_000 - prompt * price.inputPerMillion - used.completionTokens * price.outputPerMillion;
  // Capped before the correction loop: with a tiny output price the closed form can exceed 2^53, where
  // `room--` no longer changes the number.
  let room = Math.min(cap, Math.max(0, Math.floor(leftMicro / price.outputPerMillion)));
  while (room > 0 && !fits(room)) room--;
  return room;
}
