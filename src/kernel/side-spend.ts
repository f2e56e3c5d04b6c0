// Spend outside a run's own model turns: calls the run pays for at another model's price (the embeddings of the
// notes it looks up and keeps, docs/notes.md). They are model calls like any: inside the run's hard budget, in its
// result's usage, booked against the fleet's shared limits. The kernel carries what they cost in its state
// (`RunState.embeddings`, checkpointed), takes it off the run's budget, adds it to the result's usage, and gives
// tools a purse (`ToolContext.purse`) that reserves a call's worst case before it is made and settles the actual.
import { addUsage, type Usage } from './budget.js';
import type { CallCost } from './call-gate.js';

/** Calls a run paid outside its own model turns, at another model's price (embeddings): how many, tokens, dollars. */
export interface SideSpend {
  calls: number;
  tokens: number;
  costUsd: number;
}

/** A worst case reserved for one call: settle it with what the call cost (zero for a call that failed). */
export interface SidePayment {
  settle(actual: CallCost): Promise<void>;
}

/** What a tool pays a side call with: refused (null) when the run's budget or a shared limit cannot cover it. */
export interface SidePurse {
  reserve(worstCase: CallCost, signal: AbortSignal): Promise<SidePayment | null>;
}

export const NO_SIDE_SPEND: SideSpend = { calls: 0, tokens: 0, costUsd: 0 };

/** One more call's cost added to what was spent. */
export function addSideSpend(spent: SideSpend | undefined, more: SideSpend): SideSpend {
  const base = spent ?? NO_SIDE_SPEND;
  return {
    calls: base.calls + more.calls,
    tokens: base.tokens + more.tokens,
    costUsd: base.costUsd + more.costUsd,
  };
}

/**
 * A usage with the side spend in it: its tokens as prompt tokens (an embedding's input is one), its dollars in
 * costUsd, and the breakdown as `embeddings`. The spend is the run's own: a tree's usage has it in `self` too (its
 * tokens and dollars; the breakdown stays on the usage), so usage minus self is still the children's. The usage
 * unchanged when nothing was spent.
 */
export function withSideSpend<U extends Usage & { embeddings?: SideSpend; self?: Usage }>(
  usage: U,
  side: SideSpend | undefined,
): U {
  if (!side || side.calls === 0) return usage;
  return {
    ...plus(usage, side),
    embeddings: addSideSpend(usage.embeddings, side),
    ...(usage.self ? { self: plus(usage.self, side) } : {}),
  };
}

/** The side spend's tokens and dollars added to a usage. */
function plus<U extends Usage>(usage: U, side: SideSpend): U {
  return {
    ...usage,
    ...addUsage(usage, { promptTokens: side.tokens, completionTokens: 0 }),
    totalTokens: usage.totalTokens + side.tokens,
    costUsd: usage.costUsd + side.costUsd,
  };
}
