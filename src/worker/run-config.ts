// From a validated task and the process's configuration to what the kernel needs: the task's own budget
// over the fleet's defaults, its model (which must have a price), its protocol.
import type { Budget } from '../agent/budget.js';
import type { AgentRunOptions } from '../agent/run-agent.js';
import type { ProtocolName } from '../agent/protocol.js';
import type { Env } from '../../config/env.js';
import { priceOf, type ModelPrice } from '../llm/pricing.js';
import type { AgentTask } from '../queue/task-schema.js';
import { TOOL_NAMES, type ToolName } from '../queue/tool-names.js';

export interface RunConfig {
  model: string;
  price: ModelPrice;
  budget: Budget;
  protocol: ProtocolName;
  tools: ToolName[];
  options: AgentRunOptions;
}

/** Throws ConfigError when the task's model has no price. */
export function runConfigFor(task: AgentTask, env: Env): RunConfig {
  const model = task.model ?? env.LLM_MODEL;
  return {
    model,
    price: priceOf(model, env.LLM_PRICES ?? {}),
    budget: {
      maxSteps: task.budget?.maxSteps ?? env.AGENT_MAX_STEPS,
      maxTokens: task.budget?.maxTokens ?? env.AGENT_MAX_TOKENS,
      maxCostUsd: task.budget?.maxCostUsd ?? env.AGENT_MAX_COST_USD,
      deadlineMs: task.budget?.deadlineMs ?? env.AGENT_DEADLINE_MS,
    },
    protocol: task.protocol ?? env.AGENT_PROTOCOL,
    tools: task.tools ?? [...TOOL_NAMES],
    options: {
      memoryWindow: env.AGENT_MEMORY_WINDOW,
      temperature: env.LLM_TEMPERATURE,
      completionTokens: env.LLM_MAX_TOKENS,
      toolResultMaxTokens: env.AGENT_TOOL_RESULT_MAX_TOKENS,
      modelTimeoutMs: env.LLM_TIMEOUT_MS,
    },
  };
}
