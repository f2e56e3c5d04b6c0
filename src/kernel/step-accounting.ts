// What each step's trace reports: the model calls it made, the usage and time they took, and the events
// (folds, the final turn's reason) since the last trace. A call that makes no step of its own (a memory
// summary, a final turn that could not be paid) is carried over to the next step's trace, so the traces of a
// run add up to its result's usage.
import { addUsage, usageOf, type Budget, type TokenUsage } from './budget.js';
import * as D from './defaults.js';
import { truncateChars } from './truncate.js';
import type { RunState, StepTrace, TraceEvent, TraceKind } from './types.js';
import type { ModelPrice } from './pricing.js';

/** Model calls not yet attributed to a step's trace. */
export interface TraceCarry {
  usage: TokenUsage;
  modelCalls: number;
  latencyMs: number;
}

/** A step's own model call (or the turn's, for an action step), as it reaches the trace. */
export interface StepCall {
  usage: TokenUsage;
  attempts: number;
  latencyMs: number;
  modelLatencyMs?: number;
}

export const emptyCarry = (): TraceCarry => ({
  usage: { promptTokens: 0, completionTokens: 0 },
  modelCalls: 0,
  latencyMs: 0,
});

export class StepAccounting {
  private carry: TraceCarry = emptyCarry();
  /** Folds and decisions since the last step's trace, reported with the next one. */
  private events: TraceEvent[] = [];

  /** Usage of a call that made no step of its own is reported with the next step's trace. */
  carryOver(call: { usage: TokenUsage; attempts: number; latencyMs: number }): void {
    this.carry = {
      usage: addUsage(this.carry.usage, call.usage),
      modelCalls: this.carry.modelCalls + call.attempts,
      latencyMs: this.carry.latencyMs + call.latencyMs,
    };
  }

  /** What was carried so far, handed to a turn of tool calls (its trace comes when its tools are done). */
  takeCarry(): TraceCarry {
    const carried = this.carry;
    this.carry = emptyCarry();
    return carried;
  }

  noteEvent(event: TraceEvent): void {
    this.events.push(event);
  }

  /**
   * Closes a step's accounting: its call plus what was carried (an action step's carried calls are in its
   * call already) and the events since the last step. The trace is only built when someone reads it.
   */
  closeStep(
    fields: {
      state: RunState;
      budget: Budget;
      price: ModelPrice;
      step: number;
      kind: TraceKind;
      actions: StepTrace['actions'];
      observations: string[];
      call: StepCall;
      error: string | null;
    },
    wanted: boolean,
  ): StepTrace | null {
    const { state, budget, price, step, kind, call } = fields;
    const carried = kind === 'action' ? emptyCarry() : this.carry;
    const usage = addUsage(call.usage, carried.usage);
    const modelCalls = call.attempts + carried.modelCalls;
    const latencyMs = call.latencyMs + carried.latencyMs;
    const modelLatencyMs = (call.modelLatencyMs ?? call.latencyMs) + carried.latencyMs;
    if (kind !== 'action') this.carry = emptyCarry();
    const events = this.events;
    this.events = [];
    if (!wanted) return null;
    const totals = usageOf(state.usage, price);
    const priced = usageOf(usage, price);
    return {
      runId: state.runId,
      step,
      kind,
      actions: fields.actions,
      observations: fields.observations.map((o) => truncateChars(o, D.TRACE_OBSERVATION_MAX_CHARS)),
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      ...(priced.cachedPromptTokens ? { cachedPromptTokens: priced.cachedPromptTokens } : {}),
      ...(priced.reasoningTokens ? { reasoningTokens: priced.reasoningTokens } : {}),
      costUsd: priced.costUsd,
      latencyMs,
      modelLatencyMs,
      modelCalls,
      error: fields.error,
      ...(events.length > 0 ? { events } : {}),
      totals: {
        ...totals,
        steps: state.steps,
        maxSteps: budget.maxSteps,
        toolCalls: state.toolCalls,
      },
    };
  }
}
