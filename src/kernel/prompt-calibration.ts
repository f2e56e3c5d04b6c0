// The prompt estimate every budget check plans with, calibrated by the usage the endpoint reports.
//
// It starts from a bound on the documented count (tool calls framed as endpoints frame them). An endpoint may
// still count more: its own framing of tool calls, a preamble of its own. After every call that reports usage,
// the run keeps the worst it has seen in two forms, as a ratio to the bound and as extra tokens per tool call
// of the history (a ratio learnt on a short history lags behind a history that grows by tool calls), and
// scales every later estimate by whichever is larger, before the margin; until a reported prompt had tool calls,
// each is planned with a few tokens more. Pure arithmetic: the state is two numbers and a flag, kept in the run's
// checkpoint, so a resumed run estimates exactly as the run it continues.
import type { ChatMessage, ToolSpec } from './messages.js';
import {
  PROMPT_ESTIMATE_MARGIN,
  PROMPT_ESTIMATE_SLACK_TOKENS,
  PROMPT_EXTRA_PER_TOOL_CALL_MAX,
  PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN,
  PROMPT_RATIO_MAX,
} from './defaults.js';
import { countPromptTokensBound, type TokenCounter } from './tokens.js';

export interface PromptCalibrationState {
  /** The worst reported prompt tokens seen, over the bound (1 to PROMPT_RATIO_MAX). */
  ratio: number;
  /** The worst reported excess over the bound seen, per tool call of the history (0 to the maximum). */
  extraPerToolCall: number;
  /**
   * Set once a reported prompt had tool calls in its history; until then each tool call is planned with at least
   * PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN more. Absent in checkpoints written before it was kept (planned so too).
   */
  toolCallsReported?: true;
}

/** A prompt as the estimate sees it: its bound, and the tool calls of its history. */
export interface PromptSize {
  bound: number;
  toolCalls: number;
}

export const UNCALIBRATED: PromptCalibrationState = { ratio: 1, extraPerToolCall: 0 };

export function measurePrompt(
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[] | undefined,
  count: TokenCounter,
): PromptSize {
  let toolCalls = 0;
  for (const message of messages)
    if (message.role === 'assistant') toolCalls += message.tool_calls?.length ?? 0;
  return { bound: countPromptTokensBound(messages, tools, count), toolCalls };
}

export class PromptCalibration {
  private current: PromptCalibrationState;

  constructor(state: PromptCalibrationState = UNCALIBRATED) {
    this.current = {
      ratio: within(state.ratio, 1, PROMPT_RATIO_MAX),
      extraPerToolCall: within(state.extraPerToolCall, 0, PROMPT_EXTRA_PER_TOOL_CALL_MAX),
      ...(state.toolCallsReported === true ? { toolCallsReported: true as const } : {}),
    };
  }

  get state(): PromptCalibrationState {
    return { ...this.current };
  }

  /** The prompt tokens to plan a call with: never below the bound, plus the margin. */
  estimate(size: PromptSize): number {
    const { ratio, toolCallsReported } = this.current;
    const extraPerToolCall = toolCallsReported
      ? this.current.extraPerToolCall
      : Math.max(this.current.extraPerToolCall, PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN);
    const calibrated = Math.max(size.bound * ratio, size.bound + size.toolCalls * extraPerToolCall);
    return Math.ceil(calibrated * (1 + PROMPT_ESTIMATE_MARGIN)) + PROMPT_ESTIMATE_SLACK_TOKENS;
  }

  /** What the endpoint reported for a prompt of this size. */
  observe(size: PromptSize, reportedPromptTokens: number): void {
    if (!(size.bound > 0) || !Number.isFinite(reportedPromptTokens)) return;
    if (size.toolCalls > 0) this.current = { ...this.current, toolCallsReported: true };
    const excess = reportedPromptTokens - size.bound;
    if (excess <= 0) return;
    this.current = {
      ...this.current,
      ratio: within(Math.max(this.current.ratio, reportedPromptTokens / size.bound), 1, PROMPT_RATIO_MAX),
      extraPerToolCall:
        size.toolCalls > 0
          ? within(
              Math.max(this.current.extraPerToolCall, excess / size.toolCalls),
              0,
              PROMPT_EXTRA_PER_TOOL_CALL_MAX,
            )
          : this.current.extraPerToolCall,
    };
  }
}

/** `value` clamped to [min, max]; anything not a number (an old or damaged checkpoint) is `min`. */
function within(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : min;
}
