// Agents that call agents, as the kernel sees them: a call of a child agent's tool is a task of its own, run
// elsewhere (by a worker, as a job of its own on any worker); the run parks until every child of its turn has a
// result, which comes back as that call's result. Each child is given a budget carved from what the run has left
// (less the final turn's reserve), so the tree never passes the parent's limits; what children spent counts
// against the parent from then on. Design: docs/child-agents.md.
import { z } from 'zod';
import { addUsage, usageOf, type Usage } from './budget.js';
import type { ModelPrice } from './pricing.js';
import type { AgentDefinition } from './define-agent.js';
import type { PlannedCall } from './protocol.js';
import type { Tool } from './tool.js';
import type { ToolRegistry } from './tool-registry.js';
import type {
  ChildBudget,
  ChildRequest,
  PendingChild,
  PendingTurn,
  RunState,
  RunUsage,
  RunStatus,
  StopReason,
  ToolCallRecord,
} from './types.js';

export type { ChildBudget, ChildRecord, ChildRequest, PendingChild } from './types.js';
import { callKeyOf } from './turn-approvals.js';
import { truncateChars } from './truncate.js';
import { withSideSpend } from './side-spend.js';

/** Children one turn may start (a call past it is refused to the model). */
export const DEFAULT_MAX_CHILDREN_PER_TURN = 8;
/** Below this many tokens, or a cent, a child could not make one useful step: the call is refused instead. */
export const MIN_CHILD_TOKENS = 1_000;
export const MIN_CHILD_COST_USD = 0.001;

/** The tool a child agent is offered to its parent's model as: its name with `-` as `_`. */
export function childToolName(agent: string): string {
  return agent.replace(/-/g, '_');
}

/** A child agent as a tool: its input schema (or `{ task }`), its description; run as a job, never in process. */
export function childAgentTool(child: AgentDefinition): Tool {
  return {
    name: childToolName(child.name),
    description: child.description,
    parameters:
      child.input ?? z.object({ task: z.string().min(1).max(8_000).describe('What the agent is to do.') }),
    childAgent: child.name,
    execute() {
      // The kernel parks on such a call; only a run without a worker could get here.
      return Promise.reject(
        new Error(`${child.name} is an agent: it runs as a task of its own, not in process`),
      );
    },
  };
}

/** What a child's job ended with, as the parent is resumed with it. */
export interface ChildOutcome {
  jobId: string;
  agent: string;
  status: RunStatus;
  stopReason: StopReason;
  answer: string | null;
  /** The structured output of a child with an output schema. */
  output?: unknown;
  usage: Usage;
  stopDetail?: string;
  error?: string | null;
}

/** What a run is given about children: whether it may start any (the depth), how many a turn, their results. */
export interface RunChildren {
  /** False past the tree's depth limit: a child call is refused to the model. Default true. */
  allowed?: boolean;
  maxDepth?: number;
  maxPerTurn?: number;
  /** By call key, for the turn the run was parked on. */
  results?: Readonly<Record<string, ChildOutcome>>;
}

export interface ChildPlanning {
  tools: ToolRegistry;
  children: RunChildren | undefined;
  /** The budget each of `n` children would get, or null when what is left cannot pay for one. */
  carve(n: number): ChildBudget | null;
}

/**
 * Child slots for a new turn's calls, and the refusals made at once (past the depth, past the per-turn cap,
 * no budget left); undefined when the turn calls no child.
 */
export function childrenFor(
  pending: PendingTurn,
  planning: ChildPlanning,
): (PendingChild | null)[] | undefined {
  const asked = pending.calls.map((call) => childCall(call, planning.tools));
  if (!asked.some((c) => c !== null)) return undefined;
  const maxPerTurn = planning.children?.maxPerTurn ?? DEFAULT_MAX_CHILDREN_PER_TURN;
  const starting = asked.filter((c) => c !== null).length;
  const budget = planning.carve(Math.min(starting, maxPerTurn));
  let started = 0;
  return asked.map((child, i) => {
    if (!child) return null;
    const call = pending.calls[i]!;
    const refuse = (code: string, why: string): null => {
      pending.results[i] = refusal(call, child.input, code, why);
      return null;
    };
    if (planning.children?.allowed === false) {
      const depth = planning.children.maxDepth;
      return refuse(
        'child_depth',
        `${call.name} was not started: agents may call agents at most ${depth ?? 'a few'} deep.`,
      );
    }
    if (started >= maxPerTurn)
      return refuse('child_limit', `${call.name} was not started: at most ${maxPerTurn} agents per turn.`);
    if (!budget)
      return refuse(
        'child_budget',
        `${call.name} was not started: the budget left cannot pay for another agent.`,
      );
    started++;
    return { agent: child.agent, input: child.input, budget };
  });
}

/** The child a call asks for: its agent and its validated input; null for any other call or bad arguments. */
function childCall(call: PlannedCall, tools: ToolRegistry): { agent: string; input: unknown } | null {
  const tool = tools.get(call.name);
  if (!tool?.childAgent || !call.args.ok) return null;
  // The child is given the arguments as the model wrote them (its own schema parses them again when it starts).
  const input = call.args.value ?? {};
  return tool.parameters.safeParse(input).success ? { agent: tool.childAgent, input } : null;
}

function refusal(call: PlannedCall, args: unknown, code: string, output: string): ToolCallRecord {
  return { id: call.id, tool: call.name, args, ok: false, output, errorCode: code, latencyMs: 0 };
}

/** The children of the turn still without a result, as the run asks for them. */
export function awaitingChildrenOf(pending: PendingTurn, keyPrefix: string, step: number): ChildRequest[] {
  const awaiting: ChildRequest[] = [];
  pending.children?.forEach((slot, i) => {
    const call = pending.calls[i];
    if (!slot || pending.results[i] || !call) return;
    awaiting.push({
      callKey: callKeyOf(keyPrefix, step, i),
      callId: call.id,
      step,
      agent: slot.agent,
      input: slot.input,
      budget: slot.budget,
    });
  });
  return awaiting;
}

/**
 * Takes the results given for the turn's children into it: each becomes its call's result (the answer, or the
 * output as JSON; a child that did not succeed says how it ended). Answers the outcomes taken.
 */
export function applyChildResults(
  pending: PendingTurn,
  given: RunChildren | undefined,
  runId: string,
  step: number,
  bound: (observation: string) => string,
): ChildOutcome[] {
  const results = given?.results;
  const taken: ChildOutcome[] = [];
  if (!pending.children || !results) return taken;
  pending.children.forEach((slot, i) => {
    const call = pending.calls[i];
    if (!slot || pending.results[i] || !call) return;
    const outcome = results[callKeyOf(runId, step, i)];
    if (!outcome) return;
    pending.results[i] = {
      id: call.id,
      tool: call.name,
      args: slot.input,
      ok: outcome.status === 'succeeded',
      // A child's answer is a tool result: bounded as one before it enters the parent's memory.
      output: bound(childObservation(outcome)),
      errorCode: outcome.status === 'succeeded' ? null : `child_${outcome.stopReason}`,
      latencyMs: 0,
    };
    taken.push(outcome);
  });
  return taken;
}

/** What the parent's model reads of a child: its answer (or output), or how it ended and what it had. */
function childObservation(outcome: ChildOutcome): string {
  const answer =
    outcome.output !== undefined && outcome.output !== null ? JSON.stringify(outcome.output) : outcome.answer;
  if (outcome.status === 'succeeded') return answer ?? '';
  const detail = outcome.stopDetail ? ` (${outcome.stopDetail})` : outcome.error ? ` (${outcome.error})` : '';
  const partial = answer ? `; what it had: ${answer}` : '';
  return truncateChars(
    `${outcome.agent} ${outcome.status}: ${outcome.stopReason}${detail}${partial}`,
    20_000,
  );
}

/**
 * What a run's state has spent, its children's spend included: the usage its result reports, with its own part
 * as `self` when it called children.
 */
export function treeUsageOf(
  state: Pick<RunState, 'usage' | 'childUsage' | 'embeddings'>,
  price: ModelPrice,
): RunUsage {
  const own = withSideSpend<RunUsage>(usageOf(state.usage, price), state.embeddings);
  if (state.childUsage && own.embeddings) {
    // The breakdown is the run's own: its children's embeddings are in their usage (and so in the tree's).
    const { embeddings, ...self } = own;
    return { ...addTreeUsage(self, state.childUsage), self, embeddings };
  }
  return state.childUsage ? { ...addTreeUsage(own, state.childUsage), self: own } : own;
}

/** Two usages of the tree added: tokens, dollars and the optional counts. */
export function addTreeUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    ...addUsage(a, b),
    totalTokens: a.totalTokens + b.totalTokens,
    costUsd: a.costUsd + b.costUsd,
  };
  if (a.flexSavedUsd !== undefined || b.flexSavedUsd !== undefined)
    sum.flexSavedUsd = (a.flexSavedUsd ?? 0) + (b.flexSavedUsd ?? 0);
  return sum;
}
