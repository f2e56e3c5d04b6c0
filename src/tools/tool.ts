// A tool: a name, a description the model reads (descriptions decide accuracy), a zod schema for its
// arguments, and an async execute that honours an AbortSignal.
import type { z } from 'zod';
import type { UncertainEffect } from '../agent/types.js';

export interface ToolContext {
  /** Aborted when the call times out, the run is cancelled, or its deadline passes. */
  signal: AbortSignal;
  /** The run (job) this call belongs to. */
  runId: string;
  /**
   * A key for this call that is stable across retries and resumes of the same run (run id, step, position):
   * side effects use it to happen at most once.
   */
  callKey: string;
  step: number;
}

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: Schema;
  /** Per-call time limit in ms; the registry default applies when absent. */
  timeoutMs?: number;
  /**
   * True when a call changes nothing outside the run (a query, a lookup): making it twice is harmless. A turn
   * of such calls is not checkpointed before the tools run; after a crash the model is asked again instead.
   * Absent means the call may have side effects.
   */
  readOnly?: boolean;
  /** Returns what the model observes: a string, or a value rendered as compact JSON. */
  execute(args: z.output<Schema>, ctx: ToolContext): Promise<unknown>;
}

/** Identity, for type inference of `execute`'s arguments from the schema. */
export function defineTool<Schema extends z.ZodType>(tool: Tool<Schema>): Tool<Schema> {
  return tool;
}

/**
 * What `execute` returns when the outcome of its side effect cannot be known (an email that may or may not have
 * gone out): the model observes `observation`, and the run's result lists the effect (`uncertainEffects`).
 */
export class UncertainOutcome {
  constructor(
    readonly observation: string,
    readonly effect: Pick<UncertainEffect, 'what' | 'why'>,
  ) {}
}
