// From a validated task, its agent and the process's configuration to what the kernel needs: the task's own
// budget over the agent's over the fleet's defaults (never above the agent's ceiling), its model (which must
// have a price), its protocol, its tools, its instructions and the text the model reads as the task.
import type { Budget } from '../kernel/budget.js';
import { DEFAULT_AGENT, DEFAULT_NOTES, type AgentDefinition } from '../kernel/define-agent.js';
import { toolNamesOf } from '../kernel/define-fleet.js';
import { InputError } from '../kernel/errors.js';
import type { AgentRunOptions } from '../kernel/run-agent.js';
import type { ApprovalPolicy } from '../kernel/approval.js';
import type { ProtocolName } from '../kernel/protocol.js';
import type { ModelApi, ReasoningEffort } from '../kernel/chat-model.js';
import type { Env } from '../../config/env.js';
import { type ModelPrice } from '../kernel/pricing.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import { formatFieldIssues, safeParse, toFieldIssues, type AgentTask } from '../queue/task-schema.js';
import { fleetBudgetDefaults, resolveTaskBudget, resolveTaskModel } from '../queue/task-budget.js';

export interface RunConfig {
  model: string;
  /** The provider's API the model is called through. */
  api: ModelApi;
  price: ModelPrice;
  budget: Budget;
  protocol: ProtocolName;
  tools: string[];
  /** What the model reads as the task: the text, the input as JSON, or both. */
  taskText: string;
  /** The agent's instructions for this input; undefined when it has none. */
  instructions: string | undefined;
  options: AgentRunOptions;
  /** Which calls wait for a decision, and for how long at most (docs/approvals.md). */
  approval: { policy: ApprovalPolicy; timeoutMs: number };
  /** Notes across tasks (docs/notes.md): how many a run recalls, within how many tokens, kept how long; null: off. */
  notes: { recall: number; maxTokens: number; keepDays: number; write: boolean } | null;
}

/**
 * Throws InputError naming the field when the task does not fit its agent (input, tools, a budget above the
 * ceiling), ConfigError when its model has no price.
 */
export function runConfigFor(task: AgentTask, env: Env, agent: AgentDefinition): RunConfig {
  const input = parseInput(task, agent);
  const allowed = toolNamesOf(agent);
  task.tools?.forEach((name, i) => {
    if (!allowed.includes(name)) {
      throw new InputError(
        'invalid_task',
        `Invalid task: tools.${i}: agent "${agent.name}" has no tool "${name}"`,
      );
    }
  });
  const model = resolveTaskModel(task, agent, env.LLM_MODEL);
  const budget = resolveTaskBudget(task, agent, fleetBudgetDefaults(env));
  const completionTokens = agent.modelSettings?.maxCompletionTokens ?? env.LLM_MAX_TOKENS;
  const reasoningEffort = reasoningEffortOf(agent, env);
  const instructions =
    typeof agent.instructions === 'function' ? agent.instructions(input) : agent.instructions;
  return {
    model,
    api: agent.api ?? env.LLM_API,
    price: priceOf(model, configuredPrices(env)),
    budget,
    protocol: task.protocol ?? agent.protocol ?? env.AGENT_PROTOCOL,
    tools: task.tools ?? allowed,
    taskText: taskTextOf(task.task, input),
    instructions,
    approval: {
      // The stricter of the agent's and the task's: a task may ask for approvals, never switch its agent's off.
      policy: agent.approval === 'side-effects' ? 'side-effects' : (task.approval ?? 'none'),
      timeoutMs: task.approvalTimeoutMs ?? agent.approvalTimeoutMs ?? env.APPROVAL_TIMEOUT_MS,
    },
    notes: notesOf(agent, env),
    options: {
      memoryWindow: agent.memory?.window ?? env.AGENT_MEMORY_WINDOW,
      contextTokens: env.AGENT_CONTEXT_TOKENS,
      temperature: env.LLM_TEMPERATURE,
      // Unset, the kernel's defaults: 512 tokens (4,096 for a reasoning model that reasons), and `none` for a
      // reasoning model that takes it.
      ...(completionTokens !== undefined ? { completionTokens } : {}),
      ...(reasoningEffort !== undefined ? { reasoningEffort } : {}),
      ...(agent.modelSettings?.reasoning !== undefined
        ? { reasoningModel: agent.modelSettings.reasoning }
        : {}),
      ...((task.serviceTier ?? agent.modelSettings?.serviceTier)
        ? { serviceTier: task.serviceTier ?? agent.modelSettings?.serviceTier }
        : {}),
      toolResultMaxTokens: env.AGENT_TOOL_RESULT_MAX_TOKENS,
      modelTimeoutMs: env.LLM_TIMEOUT_MS,
    },
  };
}

/** The agent's notes settings; the built-in `default` agent's are AGENT_NOTES's unless it says otherwise. */
function notesOf(agent: AgentDefinition, env: Env): RunConfig['notes'] {
  const enabled = agent.notes?.enabled ?? (agent.name === DEFAULT_AGENT && env.AGENT_NOTES === 'on');
  if (!enabled) return null;
  return {
    recall: agent.notes?.recall ?? DEFAULT_NOTES.recall,
    maxTokens: agent.notes?.maxTokens ?? DEFAULT_NOTES.maxTokens,
    keepDays: agent.notes?.keepDays ?? DEFAULT_NOTES.keepDays,
    write: agent.notes?.write ?? false,
  };
}

/** The agent's effort, else LLM_REASONING_EFFORT's; undefined for `auto` (the kernel decides by the model). */
function reasoningEffortOf(agent: AgentDefinition, env: Env): ReasoningEffort | undefined {
  const effort = agent.modelSettings?.reasoningEffort ?? env.LLM_REASONING_EFFORT;
  return effort === 'auto' ? undefined : effort;
}

/** The task's input, validated against the agent's schema (errors name `input.<field>`). */
function parseInput(task: AgentTask, agent: AgentDefinition): unknown {
  if (!agent.input) {
    if (task.input !== undefined) {
      throw new InputError('invalid_task', `Invalid task: input: agent "${agent.name}" takes no input`);
    }
    if (task.task === undefined) {
      throw new InputError(
        'invalid_task',
        `Invalid task: task: required: agent "${agent.name}" takes no input, only task text`,
      );
    }
    return undefined;
  }
  if (task.input === undefined) {
    throw new InputError('invalid_task', `Invalid task: input: required by agent "${agent.name}"`);
  }
  const parsed = safeParse(agent.input, task.input);
  if (parsed.success) return parsed.data;
  const issues = toFieldIssues(parsed.error.issues).map((issue) => ({
    path: issue.path ? `input.${issue.path}` : 'input',
    message: issue.message,
  }));
  throw new InputError('invalid_task', `Invalid task: ${formatFieldIssues(issues)}`);
}

function taskTextOf(text: string | undefined, input: unknown): string {
  if (input === undefined) return text ?? '';
  const json = JSON.stringify(input);
  return text === undefined ? `Input: ${json}` : `${text}\n\nInput: ${json}`;
}
