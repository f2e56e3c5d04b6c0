// What the kernel tells an observer (the worker's tracing) about a run's model and tool calls, as they happen.
// A port, not an adapter: the kernel knows no tracing library. Without an observer nothing here is called and
// nothing is allocated for it (every call site is `observer?.…(…)`, whose arguments are then not evaluated).
import type { ModelApiError } from './errors.js';
import type { ChatMessage, ToolSpec } from './messages.js';
import type { ModelCallResult } from './model-call-result.js';
import type { ToolCallOutcome } from './run-tool-call.js';

export interface RunObserver {
  /** A model call (its attempts and retries) is about to be planned; undefined ignores it. */
  modelCall(call: ModelCallStart): ModelCallWatch | undefined;
  /** A tool call the model asked for is about to run (again, after an outage: a new call); undefined ignores it. */
  toolCall(call: ToolCallStart): ToolCallWatch | undefined;
}

export interface ModelCallStart {
  /** The model name sent to the endpoint. */
  model: string;
  temperature: number;
  /** What the call sends: read them, never keep or change them. */
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[] | undefined;
  /** `summary`: a memory fold; `step` and `final` make a step of the run. */
  purpose: 'step' | 'final' | 'summary';
}

export interface ModelCallWatch {
  /** An attempt is sent to the endpoint (the first, or a retry), asking for at most `maxTokens`. */
  attempt(attempt: number, maxTokens: number): void;
  /** An attempt failed; it is retried when the error is retryable and the budget and the deadline allow. */
  attemptFailed(attempt: number, error: ModelApiError): void;
  /** The call is over. `costUsd`: what it charged the run, over all its attempts. */
  ended(result: ModelCallResult, costUsd: number): void;
}

export interface ToolCallStart {
  name: string;
  /** The model's id of the call (tools protocol) or the kernel's (json protocol). */
  callId: string;
  step: number;
  /** The parsed arguments; undefined when they did not parse. */
  args: unknown;
}

export interface ToolCallWatch {
  ended(outcome: ToolCallOutcome): void;
}
