// The kernel's public types: what a run returns (docs/tasks-and-results.md), what it reports after each step,
// and the serializable state it can be resumed from.
import type { ApprovalDecision, ApprovalRequest } from './approval.js';
import type { RunError } from './errors.js';
import type { Budget, TokenUsage, Usage } from './budget.js';
import type { AssistantMessage, ChatMessage } from './messages.js';
import type { ModelPrice } from './pricing.js';
import type { PromptCalibrationState } from './prompt-calibration.js';
import type { PlannedCall, ProtocolName } from './protocol.js';
import type { SideSpend } from './side-spend.js';
import type { UncertainEffect } from './uncertain-effect.js';

export type { UncertainEffect } from './uncertain-effect.js';
export type { SideSpend } from './side-spend.js';

export type RunStatus = 'succeeded' | 'stopped' | 'failed';
/**
 * Every stop reason, for the schemas, filters and metric labels that list them. `awaiting_approval` (like
 * `cancelled` on shutdown) does not end a run: it is parked, its state open, until its calls are decided.
 */
export const STOP_REASONS = [
  'answer',
  'max_steps',
  'token_budget',
  'cost_budget',
  'deadline',
  'cancelled',
  'error',
  'awaiting_approval',
  'awaiting_children',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export interface AgentResult {
  jobId: string;
  status: RunStatus;
  stopReason: StopReason;
  answer: string | null;
  steps: number;
  toolCalls: number;
  usage: RunUsage;
  error: RunError | null;
  /**
   * Side effects (an email) whose outcome nothing could tell, present only when there are some: the run may
   * have succeeded without them. Added to the result's shape, never replacing a field.
   */
  uncertainEffects?: UncertainEffect[];
  /**
   * Present only for a run with an output schema: the validated value, or null when the run ended without one
   * (the reason is in `error`). `answer` then holds the value as JSON text.
   */
  output?: unknown;
  /**
   * Present for a run a budget stopped (token_budget, cost_budget): what was left, what the next call needed and,
   * for a fleet scope (a batch or daily cap), what other jobs held reserved. For a task someone cancelled (the
   * worker adds it): who cancelled and when.
   */
  stopDetail?: string;
  /**
   * Present only with stopReason `awaiting_approval`: the calls waiting for a decision. The run resumes from its
   * checkpoint with the decisions (`AgentRunInput.approvals`); the rest of its turn has run.
   */
  awaitingApproval?: ApprovalRequest[];
  /**
   * Present only with stopReason `awaiting_children`: the child agents' tasks to run; the run resumes from its
   * checkpoint with their outcomes (`AgentRunInput.children.results`).
   */
  awaitingChildren?: ChildRequest[];
  /** The child agents this run called, when it called any; `usage` then covers the whole tree. */
  children?: ChildRecord[];
  /** The notes of earlier runs the run was given (docs/notes.md), by id; present only when there were some. */
  notesUsed?: string[];
}

export interface ToolCallRecord {
  id: string;
  tool: string;
  args: unknown;
  ok: boolean;
  /** As it entered memory (cut to the tool-result token limit). */
  output: string;
  errorCode: string | null;
  latencyMs: number;
  /** Set when the call's side effect may or may not have happened. */
  uncertain?: UncertainEffect;
}

/** A step whose model call is done but whose tool calls are not all finished: resumed call by call. */
export interface PendingTurn {
  assistant: AssistantMessage;
  calls: PlannedCall[];
  /** One per call, null while that call has not finished. */
  results: (ToolCallRecord | null)[];
  /** The step's share of usage and time, carried into its trace. */
  trace: { usage: TokenUsage; modelLatencyMs: number; attempts: number; startedAt: number };
  /**
   * One per call, null for a call that needs no approval; absent when none does. Decided once per call: a
   * resume never asks again, and the decision stays for the step's trace.
   */
  approvals?: (PendingApproval | null)[];
  /** One per call, null for a call that is not a child agent's task; absent when the turn starts none. */
  children?: (PendingChild | null)[];
}

/** A call that waits for a person: since when, and the decision once it came. */
export interface PendingApproval {
  requestedAt: number;
  /** The arguments as the model gave them (accepted by the tool's schema), as the approver is shown them. */
  arguments: unknown;
  decision?: ApprovalDecision;
}

/** Everything needed to continue a run: plain JSON, stored by the worker after every step. */
export interface RunState {
  version: 1;
  runId: string;
  task: string;
  protocol: ProtocolName;
  budget: Budget;
  /** The model's prices when the run started (absent in checkpoints written before prices were kept). */
  price?: ModelPrice;
  startedAt: number;
  /**
   * The model's turns and their results after the pinned system prompt and task (and the summary), as they were
   * sent; a result cleared to save context keeps its message.
   */
  history: ChatMessage[];
  /** The model's own account of turns no longer in the history, sent as an assistant message; null when none. */
  summary: string | null;
  usage: TokenUsage;
  steps: number;
  toolCalls: number;
  modelCalls: number;
  pending: PendingTurn | null;
  repeat: { signature: string | null; count: number };
  /** What the endpoint's reported usage taught the prompt estimate; absent before the first call. */
  promptCalibration?: PromptCalibrationState;
  /**
   * When an attempt ended retryable (an outage): the time until the next attempt resumes is not charged to the
   * deadline. Absent otherwise.
   */
  suspendedAt?: number;
  /** Set when the run has ended: resuming a finished run returns this instead of calling anything. */
  result: AgentResult | null;
  /** Side effects of finished calls whose outcome is unknown, one per call key; absent when none. */
  uncertainEffects?: UncertainEffect[];
  /** Why the model's latest output failed its schema, while it has given no valid one; absent otherwise. */
  outputIssues?: string;
  /** Set once the endpoint refused `response_format`: the rest of the run asks without it. */
  responseFormatRefused?: true;
  /** The child agents' outcomes so far, and what they spent together (part of the run's budget); absent without. */
  children?: ChildRecord[];
  childUsage?: Usage;
  /** The notes of earlier runs the run was opened with (recalled-notes.ts); absent without. */
  recalled?: string[];
  /** What the run paid for embeddings outside its model turns (side-spend.ts): part of its budget; absent without. */
  embeddings?: SideSpend;
}

/**
 * A checkpoint as the kernel hands it out: the state serialized once, as the JSON a store keeps; `state` parses
 * it back on demand (a copy: changing it changes nothing in the run).
 */
export interface Checkpoint {
  readonly json: string;
  readonly state: RunState;
}

export type TraceKind = 'action' | 'answer' | 'invalid' | 'final';

/**
 * What the loop decided around a step, beyond its model and tool calls: older results cleared or older turns
 * folded into the memory summary before the step's call, or a final tool-less turn because a limit was near. For
 * the run console.
 */
export type TraceEvent =
  | {
      type: 'fold';
      /** Messages folded into the summary. */
      messages: number;
      /** The summary the following prompts carry (cut for storage). */
      summary: string;
      /** Whether the model wrote the summary (else it is the deterministic one). */
      byModel: boolean;
      /** Model calls the summary cost (attempts included), and their usage: part of the step's figures. */
      modelCalls: number;
      promptTokens: number;
      completionTokens: number;
      costUsd: number;
    }
  | {
      type: 'clear';
      /** Results of earlier turns cleared in place to fit the context or the budget (their messages stay). */
      results: number;
      /** The tokens they held, and the tools they came from. */
      tokens: number;
      tools: string[];
    }
  | { type: 'final_turn'; reason: 'max_steps' | 'token_budget' | 'cost_budget' | 'deadline'; why: string }
  | {
      type: 'approval';
      /** The call, by the model's id, and its tool. */
      callId: string;
      tool: string;
      decision: 'approve' | 'reject' | 'expire';
      /** Who decided (null when it expired), why, and when (epoch ms); when it was asked. */
      by: string | null;
      reason: string | null;
      requestedAt: number;
      decidedAt: number | null;
      /** The arguments the approver changed the call's to (the action's `args` are what ran); absent when unchanged. */
      editedArguments?: unknown;
    }
  | {
      type: 'recall';
      /**
       * Notes of earlier runs the kernel put at the head of the transcript, as a `recall_notes` call and its
       * result (recalled-notes.ts), before the first model call: what they were looked up for, and which.
       */
      query: string;
      notes: { id: string; text: string }[];
    };

/** One event per step, for the trace store and the job's progress. */
export interface StepTrace {
  runId: string;
  step: number;
  kind: TraceKind;
  actions: {
    id: string;
    tool: string;
    args: unknown;
    /** Whether the call succeeded, why not (unknown_tool, invalid_arguments, timeout, …), and how long it ran. */
    ok: boolean;
    errorCode: string | null;
    latencyMs: number;
  }[];
  /** One per action (or the single feedback of an invalid turn, or the answer), cut for storage. */
  observations: string[];
  /** Every model call made for this step: memory summaries and retries included. */
  promptTokens: number;
  completionTokens: number;
  /** Parts of the above the endpoint reported as cached prompt and as reasoning; absent when none. */
  cachedPromptTokens?: number;
  reasoningTokens?: number;
  costUsd: number;
  /** The whole step, model and tools. */
  latencyMs: number;
  /** The model calls of the step alone (retries and memory summaries included). */
  modelLatencyMs: number;
  modelCalls: number;
  error: string | null;
  /** Folds and budget decisions that led to this step; absent when there were none (and in older traces). */
  events?: TraceEvent[];
  /** The run's totals after this step, for progress displays. */
  totals: Usage & { steps: number; maxSteps: number; toolCalls: number };
}

// Agents that call agents (child-calls.ts): here, as they are parts of a run's state and result.

/** A child's limits, carved from its parent's: its steps are its own agent's. */
export type ChildBudget = Omit<Budget, 'maxSteps'>;

/** A child the run waits on: what its job is given. */
export interface ChildRequest {
  callKey: string;
  callId: string;
  step: number;
  agent: string;
  /** The child's input (its schema's output), or `{ task }` for a child without an input schema. */
  input: unknown;
  budget: ChildBudget;
}

/**
 * A result's usage: every call of the run's tree. A run that called child agents adds `self`, its own calls
 * alone (the rest is its children's, listed in `children`).
 */
export interface RunUsage extends Usage {
  self?: Usage;
  /**
   * The part of the usage above spent on embeddings (notes looked up and kept by similarity, docs/notes.md): their
   * input tokens are in promptTokens and totalTokens, their dollars in costUsd. Present only when there were some.
   */
  embeddings?: SideSpend;
}

/** A child of the tree, as the parent's result lists it. */
export interface ChildRecord {
  jobId: string;
  agent: string;
  status: RunStatus;
  stopReason: StopReason;
  usage: Usage;
}

/** One slot per call of a new turn: a child to start, or null for any other call. */
export interface PendingChild {
  agent: string;
  input: unknown;
  budget: ChildBudget;
}
