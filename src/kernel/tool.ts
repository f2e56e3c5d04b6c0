// A tool: a name, a description the model reads (descriptions decide accuracy), a zod schema for its
// arguments, and an async execute that honours an AbortSignal.
import type { z } from 'zod';
import type { NeedsApproval } from './approval.js';
import type { SidePurse } from './side-spend.js';
import type { UncertainEffect } from './uncertain-effect.js';

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
  /**
   * Pays a call the tool makes to a model endpoint outside the run's turns (an embedding): reserves its worst case
   * against what is left of the run's budget (after the final answer's reserve) and the fleet's shared limits,
   * then settles what it cost, which the run's usage and budget count from then on. Null when it cannot be paid, or
   * once this call or the run has ended: the tool does without the call. A payment still unsettled when the run
   * ends is counted at its worst case. Absent outside a kernel run (a test's context).
   */
  purse?: SidePurse;
  /**
   * Runs `effect` at most once per job and call (and `key`, for a call with several effects), across retries and
   * resumes: a later attempt gets the recorded value back instead of running it again. In a worker it is backed
   * by the store's effect ledger; an attempt that stopped between the effect and its record leaves the effect
   * pending: the tool's `effects.lookup` settles it when it has one, otherwise it is reported uncertain in the
   * result, never run twice. `effect` should throw only when nothing happened: a throw frees the key. Without a
   * ledger (the kernel alone) it just runs the effect. The states and who moves them: docs/side-effects.md.
   */
  once<T, L extends OnceLease = OnceLease>(
    // Optional, so a stand-in `(effect) => effect()` (a test's context) still fits; every ledger passes it.
    effect: (attempt?: OnceAttempt<L>) => Promise<T>,
    key?: string | OnceOptions<L>,
  ): Promise<T>;
}

/** Something held for the effect (a pooled connection), given back once the call is done with it. */
export interface OnceLease {
  release(): void;
}

export interface OnceOptions<L extends OnceLease = OnceLease> {
  /** The tool's own key, for a call with several effects. */
  key?: string;
  /** What `effects.lookup` asks the far side about (the idempotency key sent with the effect); default the effect key. */
  ref?: string;
  /** The tool's own JSON about the effect, kept on its row for reports (send_email: recipient and subject). */
  detail?: Record<string, unknown>;
  /**
   * Taken BEFORE the claim, with nothing recorded, and handed to the effect (`attempt.lease`); given back when
   * the claim is not `new` and after the effect. A claim made with a lease is started in the same write: a wait
   * for the resource (a queue of connections) never runs under a started mark, which a later attempt past the
   * grace would take for "may have happened". Undefined: nothing to hold (the claim then follows
   * `startWithClaim`).
   */
  acquire?(signal: AbortSignal): Promise<L | undefined>;
  /**
   * Without a lease, whether the claim marks the row started (default true). False: the effect calls
   * `attempt.start()` just before it reaches the far side, so an attempt that stopped before then leaves a row
   * any later attempt may take over without a lookup.
   */
  startWithClaim?: boolean;
}

/** What the effect of a `new` claim gets: its claim, its lease, and the two ways it can leave the row. */
export interface OnceAttempt<L extends OnceLease = OnceLease> {
  /** The claim's number (1 for the first attempt of the call). */
  readonly attempt: number;
  readonly lease: L | undefined;
  /**
   * Marks the row started, only while this attempt's claim still stands; false when another attempt took it
   * over: make nothing (nothing is recorded for this attempt). True at once when the claim was started.
   */
  start(): Promise<boolean>;
  /**
   * The effect may have happened and nothing can tell now (a connection lost mid-transaction): the row stays
   * pending and started with this note, and what the effect returns is not recorded. The lookup (a later
   * attempt's or the sweeper's) settles it; it is never made again by this call. Never throw for this: a throw
   * frees the row.
   */
  leavePending(why: string): Promise<void>;
}

/** A pending effect as a lookup sees it: its attempt stopped, or is still running, before recording an outcome. */
export interface PendingEffect {
  /** The ledger's key: `<callKey>` or `<callKey>#<key>` (hashed when long). */
  effectKey: string;
  jobId: string;
  tool: string;
  /** `OnceOptions.ref`, or the effect key. */
  ref: string;
}

/** What a lookup found: the effect happened (with the value `once` then returns) or certainly did not. */
export interface EffectLookupAnswer {
  happened: boolean;
  /** Recorded and returned for an effect that happened; default null. */
  value?: unknown;
}

/** How the effects of a tool with side effects are settled and capped (docs/agents-and-tools.md). */
export interface EffectHooks {
  /**
   * Did a pending effect happen? Asked once a pending row has gone unchanged for `pendingGraceMs`, by a later
   * attempt of the call and by the worker's sweeper. Throw when it cannot tell: the effect stays uncertain.
   * `happened: false` must mean it certainly did not: the effect is then made again.
   */
  lookup?(effect: PendingEffect, signal: AbortSignal): Promise<EffectLookupAnswer>;
  /** Effects of this tool one job may have (done, pending or uncertain); past it `once` refuses (`effect_cap_reached`). */
  maxPerJob?: number;
  /** How long a pending effect may belong to a live attempt (a later attempt waits that long). Default 120 s. */
  pendingGraceMs?: number;
  /** Told of each effect of this tool the worker's sweeper settles (for logs and metrics); default a log line. */
  onSwept?(outcome: EffectSweepOutcome, effect: PendingEffect): void;
}

/** How the sweeper settled an effect: it happened, it certainly did not, or nothing could tell. */
export type EffectSweepOutcome = 'done' | 'not_done' | 'uncertain';

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: Schema;
  /**
   * The arguments' JSON Schema as the model sees it, when the tool already has one (an MCP server's
   * `inputSchema`): sent verbatim instead of the one generated from `parameters`, which still validates.
   */
  inputJsonSchema?: Record<string, unknown>;
  /** Per-call time limit in ms; the registry default applies when absent. */
  timeoutMs?: number;
  /**
   * True when a call changes nothing outside the run (a query, a lookup): making it twice is harmless. A turn
   * of such calls is not checkpointed before the tools run; after a crash the model is asked again instead.
   * Absent means the call may have side effects.
   */
  readOnly?: boolean;
  /**
   * True when what a successful call returns is a fact worth keeping for the agent's later runs (the data's shape:
   * `list_tables`, `describe_table`): with notes on, the run's end keeps it as a `fact` note, quoted data with its
   * source (docs/notes.md). Only for a `readOnly` tool whose results change rarely. Absent means never.
   */
  keepsFacts?: boolean;
  /** Settling and capping the effects this tool makes with `ctx.once` (not for readOnly tools). */
  effects?: EffectHooks;
  /**
   * Whether a call waits for a person's decision before it runs: always, or a function of the arguments as the
   * tool would receive them (recipients outside a list, an amount over a limit). A function that throws or takes
   * longer than the tool's time limit asks for approval. A task's `approval: "side-effects"` asks it of every
   * call of a tool that is not `readOnly` as well. docs/approvals.md.
   */
  needsApproval?: NeedsApproval<z.output<Schema>>;
  /**
   * Set on the tool a parent agent calls a child agent through (child-calls.ts): the call is a task of its own,
   * and the run parks until its result; `execute` is not called.
   */
  childAgent?: string;
  /** Returns what the model observes: a string, or a value rendered as compact JSON. */
  execute(args: z.output<Schema>, ctx: ToolContext): Promise<unknown>;
}

/**
 * Whether a tool's successful results are kept as facts: it declares `keepsFacts` and is `readOnly`. Asked where the
 * facts are derived, not only where a definition is checked (defineFleet): a tool source's tools are opened later,
 * and a result with side effects is no fact, whatever its tool declares.
 */
export function keptAsFacts(tool: Pick<Tool, 'keepsFacts' | 'readOnly'> | undefined): boolean {
  return tool?.keepsFacts === true && tool.readOnly === true;
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
