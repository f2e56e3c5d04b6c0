// A task's budget and model after defaults: the task's own fields over its agent's over the fleet's defaults,
// never above the agent's ceiling. One owner for the worker (which runs the task with it) and the producers
// (which forecast a batch with it), so a forecast's worst case is exactly what a worker will allow.
import type { Budget } from '../kernel/budget.js';
import { InputError } from '../kernel/errors.js';
import type { Env } from '../../config/env.js';
import type { AgentTask } from './task-schema.js';

/** What budget resolution reads of an agent: an AgentDefinition and a catalog entry are both one. */
export interface BudgetSource {
  name: string;
  model?: string | null | undefined;
  budget?: Partial<Budget> | undefined;
  budgetCeiling?: Partial<Budget> | undefined;
}

export const BUDGET_FIELDS = ['maxSteps', 'maxTokens', 'maxCostUsd', 'deadlineMs'] as const;

/** Throws InputError naming `budget.<field>` when the task asks for more than the agent's ceiling. */
export function resolveTaskBudget(task: AgentTask, agent: BudgetSource, defaults: Budget): Budget {
  const budget = { ...defaults };
  for (const field of BUDGET_FIELDS) {
    const ceiling = agent.budgetCeiling?.[field];
    const asked = task.budget?.[field];
    if (asked !== undefined && ceiling !== undefined && asked > ceiling) {
      throw new InputError(
        'invalid_task',
        `Invalid task: budget.${field}: must be at most ${ceiling} (agent "${agent.name}"'s budgetCeiling)`,
      );
    }
    const value = asked ?? agent.budget?.[field] ?? defaults[field];
    // A default above the ceiling is cut to it: only what a task asks for is refused.
    budget[field] = ceiling !== undefined ? Math.min(value, ceiling) : value;
  }
  return budget;
}

/** The model a task runs on: its own, else its agent's, else the fleet's (LLM_MODEL). */
export function resolveTaskModel(task: AgentTask, agent: BudgetSource, fleetModel: string): string {
  return task.model ?? agent.model ?? fleetModel;
}

/** The fleet's default budget (AGENT_MAX_STEPS, AGENT_MAX_TOKENS, AGENT_MAX_COST_USD, AGENT_DEADLINE_MS). */
export function fleetBudgetDefaults(
  env: Pick<Env, 'AGENT_MAX_STEPS' | 'AGENT_MAX_TOKENS' | 'AGENT_MAX_COST_USD' | 'AGENT_DEADLINE_MS'>,
): Budget {
  return {
    maxSteps: env.AGENT_MAX_STEPS,
    maxTokens: env.AGENT_MAX_TOKENS,
    maxCostUsd: env.AGENT_MAX_COST_USD,
    deadlineMs: env.AGENT_DEADLINE_MS,
  };
}
