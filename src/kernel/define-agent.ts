// An agent: what a task names (`"agent": "kpi-digest"`) to get its instructions, its tools, its model and its
// limits. The fleet configuration lists them; the worker runs the one a task names.
import { NOTES_TOOL_NAMES } from './recalled-notes.js';
import type { z } from 'zod';
import type { Budget } from './budget.js';
import type { ProtocolName } from './protocol.js';
import type { Tool } from './tool.js';
import {
  APPROVAL_POLICIES,
  MAX_APPROVAL_TIMEOUT_MS,
  MIN_APPROVAL_TIMEOUT_MS,
  type ApprovalPolicy,
} from './approval.js';
import {
  MODEL_APIS,
  REASONING_EFFORTS,
  type ModelApi,
  type ReasoningEffort,
  type ServiceTier,
} from './chat-model.js';

/** Agent and tool names: what a task, a log line and a metric label carry. */
export const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** The agent a task without `agent` runs. */
export const DEFAULT_AGENT = 'default';

export interface AgentDefinition<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  name: string;
  /** What the agent does, for the catalog and for people choosing one. */
  description: string;
  /**
   * Put before the protocol's own system prompt (which lists the tools and the reply format). A function gets the
   * task's validated `input` (undefined for a task that carries only text). Absent: the protocol's prompt alone.
   */
  instructions?: string | ((input: z.output<Input> | undefined) => string);
  /** Tool names of the fleet, or tools defined with the agent (added to the fleet's tools). */
  tools: readonly (string | Tool)[];
  /** Default model of its tasks (a task's `model` wins); default LLM_MODEL. */
  model?: string;
  /** The provider's API its model is called through (LLM_API by default); see docs/models.md. */
  api?: ModelApi;
  /** How its requests are shaped; see docs/models.md. */
  modelSettings?: ModelSettings;
  protocol?: ProtocolName;
  /** Its tasks' default budget, per field; the environment's defaults fill the rest. */
  budget?: Partial<Budget>;
  /** What a task's budget may never exceed, per field: a task asking for more is refused. */
  budgetCeiling?: Partial<Budget>;
  /** `window`: a number forces the sliding window of that many messages; `auto` the whole transcript, cut only at the limits. */
  memory?: { window?: number | 'auto' };
  /** A task for this agent carries an `input` object of this schema (and `task` text only as an addition). */
  input?: Input;
  /** The value the run must end with (structured output); carried to the kernel as `output`. */
  output?: Output;
  /**
   * `side-effects`: every call of its tools that is not read-only waits for a person's decision (a task cannot
   * switch it off); default `none`: only tools that ask (`needsApproval`), or a task's own `approval`. See
   * docs/approvals.md.
   */
  approval?: ApprovalPolicy;
  /** How long its calls may wait for a decision (a task's own wins); default APPROVAL_TIMEOUT_MS. */
  approvalTimeoutMs?: number;
  /**
   * Agents it may call: each is offered to the model as a tool named after it (`-` as `_`), taking its input (or
   * `{ task }`); a call runs as a task of its own, within this agent's budget (docs/child-agents.md).
   */
  agents?: readonly AgentDefinition[];
  /**
   * Notes across tasks (docs/notes.md): what its runs learned, recalled for its next ones as tool output. Off by
   * default (the built-in `default` agent follows AGENT_NOTES).
   */
  notes?: AgentNotes;
}

export interface AgentNotes {
  enabled: boolean;
  /** How many notes a run starts with at most; default 5. */
  recall?: number;
  /** What the recalled notes may take of the prompt, in tokens; default 400. */
  maxTokens?: number;
  /** How long a note is kept after it was learned, in days; default 90. */
  keepDays?: number;
  /** Its model may keep notes of its own with a `keep_note` tool (a call within the run's budget); default false. */
  write?: boolean;
}

export const DEFAULT_NOTES = { recall: 5, maxTokens: 400, keepDays: 90 } as const;

export interface ModelSettings {
  /**
   * `reasoning_effort` for a reasoning model (gpt-5 family, o3, o4-mini); default LLM_REASONING_EFFORT, else `none`
   * where the model takes it (docs/models.md).
   */
  reasoningEffort?: ReasoningEffort;
  /** Shape requests for a reasoning model even where the price entry does not say it is one (or, false, not). */
  reasoning?: boolean;
  /** The completion limit of a step (LLM_MAX_TOKENS by default); a reasoning model's reasoning counts in it. */
  maxCompletionTokens?: number;
  /** `flex` for work that can wait: the provider's slower tier at batch prices (a task's own setting wins). */
  serviceTier?: ServiceTier;
}

/** Identity with a name check, for type inference of `instructions`' argument from `input`. */
export function defineAgent<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType>(
  agent: AgentDefinition<Input, Output>,
): AgentDefinition<Input, Output> {
  if (!AGENT_NAME.test(agent.name)) {
    throw new Error(
      `agent name "${agent.name}" is invalid: letters, digits, _ and - only, at most 64, starting with a letter or digit`,
    );
  }
  if (agent.api !== undefined && !MODEL_APIS.includes(agent.api)) {
    throw new Error(
      `agent "${agent.name}": api must be one of ${MODEL_APIS.join(', ')}, got ${JSON.stringify(agent.api)}`,
    );
  }
  checkModelSettings(agent.name, agent.modelSettings);
  checkApproval(agent);
  checkNotes(agent);
  return agent;
}

function checkModelSettings(name: string, settings: ModelSettings | undefined): void {
  if (!settings) return;
  const { reasoningEffort, maxCompletionTokens, serviceTier } = settings;
  if (serviceTier !== undefined && serviceTier !== 'default' && serviceTier !== 'flex') {
    throw new Error(
      `agent "${name}": modelSettings.serviceTier must be default or flex, got ${JSON.stringify(serviceTier)}`,
    );
  }
  if (reasoningEffort !== undefined && !REASONING_EFFORTS.includes(reasoningEffort)) {
    throw new Error(
      `agent "${name}": modelSettings.reasoningEffort must be one of ${REASONING_EFFORTS.join(', ')}, got ${JSON.stringify(reasoningEffort)}`,
    );
  }
  if (
    maxCompletionTokens !== undefined &&
    !(Number.isInteger(maxCompletionTokens) && maxCompletionTokens >= 16 && maxCompletionTokens <= 128_000)
  ) {
    throw new Error(
      `agent "${name}": modelSettings.maxCompletionTokens must be a whole number from 16 to 128000, got ${JSON.stringify(maxCompletionTokens)}`,
    );
  }
}

/** An agent's notes settings, refused at definition with the field named. */
function checkNotes(agent: AgentDefinition): void {
  const notes = agent.notes;
  if (notes === undefined) return;
  const bad = (field: string, rule: string, value: unknown) =>
    new Error(`agent "${agent.name}": notes.${field} must be ${rule}, got ${JSON.stringify(value)}`);
  if (typeof notes.enabled !== 'boolean') throw bad('enabled', 'true or false', notes.enabled);
  // The run's own recall_notes and keep_note would collide with a tool of the agent's by either name: its first run
  // would work, and every run once it has a note would fail building its tools.
  if (notes.enabled) {
    for (const tool of agent.tools) {
      const name = typeof tool === 'string' ? tool : tool.name;
      if (NOTES_TOOL_NAMES.includes(name))
        throw new Error(
          `agent "${agent.name}": with notes on, its tool "${name}" cannot have the name of a notes tool (${NOTES_TOOL_NAMES.join(', ')})`,
        );
    }
  }
  if (notes.write !== undefined && typeof notes.write !== 'boolean')
    throw bad('write', 'true or false', notes.write);
  const whole = (field: 'recall' | 'maxTokens' | 'keepDays', min: number, max: number) => {
    const value = notes[field];
    if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= max))
      throw bad(field, `a whole number from ${min} to ${max}`, value);
  };
  whole('recall', 1, 50);
  whole('maxTokens', 50, 20_000);
  whole('keepDays', 1, 3650);
}

/** An agent's approval settings, refused at definition with the field named. */
function checkApproval(agent: AgentDefinition): void {
  if (agent.approval !== undefined && !APPROVAL_POLICIES.includes(agent.approval)) {
    throw new Error(
      `agent "${agent.name}": approval must be one of ${APPROVAL_POLICIES.join(', ')}, got ${JSON.stringify(agent.approval)}`,
    );
  }
  const ms = agent.approvalTimeoutMs;
  if (
    ms !== undefined &&
    !(Number.isInteger(ms) && ms >= MIN_APPROVAL_TIMEOUT_MS && ms <= MAX_APPROVAL_TIMEOUT_MS)
  ) {
    throw new Error(
      `agent "${agent.name}": approvalTimeoutMs must be a whole number of ms from ${MIN_APPROVAL_TIMEOUT_MS} to ${MAX_APPROVAL_TIMEOUT_MS}, got ${JSON.stringify(ms)}`,
    );
  }
}
