// A run's timeline: the one model of what a run did, read from its agent_runs row and agent_steps rows, shared
// by the run console's page (src/console/pages) and `npm run trace` (src/console/render-timeline-text.ts).
// Every text and value in it has been through the redaction rules (src/logging/redact.ts): the renderers may
// show it as it is, after escaping for their medium.
import type { RunError } from '../kernel/errors.js';
import type { StopReason, TraceEvent, TraceKind } from '../kernel/types.js';
import { redactValue, scrubText } from '../logging/redact.js';
import { truncateChars } from '../kernel/truncate.js';
import type { RunRow, RunRowStatus, StepRow } from '../store/rows.js';

export type ConsoleRun = RunRow;
export type ConsoleStep = StepRow;

export interface TimelineUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Parts of the two above: shown when non-zero. */
  cachedPromptTokens: number;
  reasoningTokens: number;
  costUsd: number;
  /** The endpoint reported no usage for some call: the counts are the fleet's estimate. */
  estimated: boolean;
}

export interface TimelineRun {
  jobId: string;
  agent: string;
  /** Whom the run was for (the task's `tenant`); null without one. */
  tenant: string | null;
  batchId: string | null;
  task: string;
  model: string;
  protocol: string;
  status: RunRowStatus;
  stopReason: StopReason | null;
  /** Why a budget stopped the run, in numbers (what was left, what the next call needed); null otherwise. */
  stopDetail: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  /** The store sweeper deleted the run's steps (STORE_KEEP_STEPS_DAYS): when, and how long after the run ended. */
  stepsDeleted: { at: Date; afterDays: number } | null;
  steps: number;
  toolCalls: number;
  attempts: number;
  usage: TimelineUsage;
  error: RunError | null;
  answer: string | null;
  /** Present only for a run whose agent has an output schema (null: it ended without a value). */
  output?: unknown;
  metadata: unknown;
}

/** What a tool call did, in the terms a person reads it in; `args` stays the whole (masked) value. */
export type ToolDetail =
  | { kind: 'sql'; sql: string }
  | { kind: 'email'; to: string; subject: string; body: string }
  | { kind: 'args' };

export type TimelineEntry =
  | {
      type: 'model_call';
      step: number;
      /** What the step's reply was: tool calls, an answer, an invalid reply, the final tool-less answer. */
      kind: TraceKind;
      promptTokens: number;
      completionTokens: number;
      cachedPromptTokens: number;
      reasoningTokens: number;
      costUsd: number;
      /** The model calls alone; null for steps recorded before it was (then `stepLatencyMs` is all there is). */
      latencyMs: number | null;
      stepLatencyMs: number;
      /** Requests for the step's reply, retries included (its memory summaries' are on their folds). */
      calls: number;
      /** Requests made again after a failure. */
      retries: number;
      error: string | null;
    }
  | {
      type: 'tool_call';
      step: number;
      /** 1-based, in the model's order. */
      index: number;
      id: string;
      tool: string;
      ok: boolean;
      errorCode: string | null;
      latencyMs: number;
      args: unknown;
      detail: ToolDetail;
      /** The call's result as the model saw it (cut for storage), or null when not recorded apart. */
      observation: string | null;
    }
  /** A memory fold as the step trace recorded it, with its step. */
  | (Extract<TraceEvent, { type: 'fold' }> & { step: number })
  /** Earlier results cleared in place to fit the context or the budget, with its step. */
  | (Extract<TraceEvent, { type: 'clear' }> & { step: number })
  | { type: 'decision'; step: number | null; text: string }
  /** Notes of earlier runs the fleet (not the model) opened the run with, masked like any text. */
  | { type: 'recall'; step: number; query: string; notes: { id: string; text: string }[] }
  | { type: 'feedback'; step: number; text: string }
  | { type: 'answer'; step: number; text: string; final: boolean };

export interface Timeline {
  run: TimelineRun;
  entries: TimelineEntry[];
  /** The run's place in a tree of agents that call agents: the job that called it, those it called. */
  tree: { parentJobId: string | null; children: TreeChild[] };
}

/** A run this one's agent called (docs/child-agents.md), as the tree shows it. */
export interface TreeChild {
  jobId: string;
  agent: string;
  status: RunRowStatus;
  stopReason: StopReason | null;
  costUsd: number;
  totalTokens: number;
}

const FINAL_TURN_TEXT: Record<string, string> = {
  max_steps: 'the step cap is reached',
  token_budget: 'token budget nearly spent',
  cost_budget: 'cost budget nearly spent',
  deadline: 'the deadline is near',
};

const STOP_TEXT: Record<StopReason, string> = {
  answer: 'answered',
  max_steps: 'the step cap was reached',
  token_budget: 'the token budget could not cover another call',
  cost_budget: 'the cost budget could not cover another call',
  deadline: 'the deadline passed',
  cancelled: 'the run was cancelled',
  error: 'an error ended the run',
  awaiting_approval: 'the run waits for approval',
  awaiting_children: 'the run waits for the agents it called',
};

const mask = (text: string): string => scrubText(text);

/** A decision on a call as the timeline says it: what, by whom, when, why, and whether it was edited. */
function approvalText(event: Extract<TraceEvent, { type: 'approval' }>): string {
  const when = event.decidedAt ? ` at ${new Date(event.decidedAt).toISOString()}` : '';
  const asked = `asked ${new Date(event.requestedAt).toISOString()}`;
  if (event.decision === 'expire') return `approval of ${event.tool} expired (${asked})${when}`;
  const verb = event.decision === 'approve' ? 'approved' : 'rejected';
  const edited =
    event.editedArguments !== undefined
      ? `; arguments edited to ${mask(truncateChars(JSON.stringify(event.editedArguments), 500))}`
      : '';
  const reason = event.reason ? `: ${mask(truncateChars(event.reason, 500))}` : '';
  return `${event.tool} ${verb} by ${mask(event.by ?? 'unknown')}${when} (${asked})${reason}${edited}`;
}

/** The timeline of `run` from its steps (in any order). Pure: reads nothing, changes nothing. */
export function buildTimeline(
  run: ConsoleRun,
  steps: readonly ConsoleStep[],
  children: readonly TreeChild[] = [],
): Timeline {
  const entries: TimelineEntry[] = [];
  const ordered = [...steps].sort((a, b) => a.step - b.step);
  for (const step of ordered) entries.push(...stepEntries(step));
  const closing = closingDecision(run, ordered);
  if (closing) entries.push(closing);
  return {
    run: timelineRun(run),
    entries,
    tree: { parentJobId: run.parentJobId ?? null, children: [...children] },
  };
}

function timelineRun(run: ConsoleRun): TimelineRun {
  return {
    jobId: run.jobId,
    agent: run.agent ?? 'default',
    tenant: run.tenant ?? null,
    batchId: run.batchId,
    task: mask(run.task),
    model: run.model,
    protocol: run.protocol,
    status: run.status,
    stopReason: run.stopReason,
    stopDetail: run.stopDetail === null ? null : mask(run.stopDetail),
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    durationMs: run.finishedAt ? Math.max(0, run.finishedAt.getTime() - run.startedAt.getTime()) : null,
    stepsDeleted: stepsDeletedOf(run),
    steps: run.steps,
    toolCalls: run.toolCalls,
    attempts: run.attempts,
    usage: {
      promptTokens: run.promptTokens,
      completionTokens: run.completionTokens,
      totalTokens: run.totalTokens,
      cachedPromptTokens: run.cachedPromptTokens,
      reasoningTokens: run.reasoningTokens,
      costUsd: run.costUsd,
      estimated: run.usageEstimated,
    },
    error: run.error ? { ...run.error, message: mask(run.error.message) } : null,
    answer: run.answer === null ? null : mask(run.answer),
    ...('output' in run ? { output: redactValue(run.output) } : {}),
    metadata: redactValue(run.metadata),
  };
}

const DAY_MS = 86_400_000;

function stepsDeletedOf(run: ConsoleRun): TimelineRun['stepsDeleted'] {
  const at = run.stepsDeletedAt ?? null;
  if (at === null) return null;
  const ended = (run.finishedAt ?? run.startedAt).getTime();
  return { at, afterDays: Math.max(0, Math.floor((at.getTime() - ended) / DAY_MS)) };
}

/** What the console and `npm run trace` say where a swept run's timeline was. */
export function stepsDeletedText(deleted: NonNullable<TimelineRun['stepsDeleted']>): string {
  const days = `${deleted.afterDays} day${deleted.afterDays === 1 ? '' : 's'}`;
  return `steps deleted after ${days} (STORE_KEEP_STEPS_DAYS), on ${deleted.at.toISOString().slice(0, 10)}`;
}

function stepEntries(step: ConsoleStep): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  // The step's figures include its memory summaries': those are shown on their fold, the rest on the call.
  const summaries = { calls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 };
  for (const event of step.events) {
    if (event.type === 'fold') {
      summaries.calls += event.modelCalls;
      summaries.promptTokens += event.promptTokens;
      summaries.completionTokens += event.completionTokens;
      summaries.costUsd += event.costUsd;
      entries.push({
        type: 'fold',
        step: step.step,
        messages: event.messages,
        summary: mask(event.summary),
        byModel: event.byModel,
        modelCalls: event.modelCalls,
        promptTokens: event.promptTokens,
        completionTokens: event.completionTokens,
        costUsd: event.costUsd,
      });
    } else if (event.type === 'clear') {
      entries.push({ ...event, step: step.step });
    } else if (event.type === 'approval') {
      entries.push({ type: 'decision', step: step.step, text: approvalText(event) });
    } else if (event.type === 'recall') {
      // Made by the kernel, not the model: notes of earlier runs, shown to the model as a tool's output.
      entries.push({
        type: 'recall',
        step: step.step,
        query: mask(event.query),
        notes: event.notes.map((note) => ({ id: note.id, text: mask(note.text) })),
      });
    } else {
      entries.push({
        type: 'decision',
        step: step.step,
        text: `final turn: ${FINAL_TURN_TEXT[event.reason] ?? event.reason}`,
      });
    }
  }
  // The step's own request is one of its calls; what is left beyond it and the summaries was made again.
  const ownCalls = step.modelCalls > 0 ? 1 : 0;
  entries.push({
    type: 'model_call',
    step: step.step,
    kind: step.kind,
    promptTokens: Math.max(0, step.promptTokens - summaries.promptTokens),
    completionTokens: Math.max(0, step.completionTokens - summaries.completionTokens),
    cachedPromptTokens: step.cachedPromptTokens,
    reasoningTokens: step.reasoningTokens,
    // Rounded as the store keeps costs (10 decimals), so a difference of sums shows no float noise.
    costUsd: Math.max(0, Number((step.costUsd - summaries.costUsd).toFixed(10))),
    latencyMs: step.modelLatencyMs,
    stepLatencyMs: step.latencyMs,
    calls: Math.max(0, step.modelCalls - summaries.calls),
    retries: Math.max(0, step.modelCalls - ownCalls - summaries.calls),
    error: step.kind === 'action' || step.error === null ? null : mask(step.error),
  });
  const observations = step.observations;
  step.actions.forEach((action, i) => {
    // Rows written before observations were kept apart: one call's observation is the whole column; several
    // calls' cannot be told apart, so the first shows them all.
    const observation =
      observations?.[i] ??
      (observations === null && (step.actions.length === 1 || i === 0) ? step.observation : null);
    const args = redactValue(action.args);
    entries.push({
      type: 'tool_call',
      step: step.step,
      index: i + 1,
      id: action.id,
      tool: action.tool,
      ok: action.ok,
      errorCode: action.errorCode,
      latencyMs: action.latencyMs,
      args,
      detail: toolDetail(action.tool, args),
      observation: observation === null ? null : mask(observation),
    });
  });
  const text = observations?.[0] ?? step.observation;
  if (step.kind === 'invalid') entries.push({ type: 'feedback', step: step.step, text: mask(text) });
  if (step.kind === 'answer' || step.kind === 'final') {
    entries.push({ type: 'answer', step: step.step, text: mask(text), final: step.kind === 'final' });
  }
  return entries;
}

/** sql_query's statement, send_email's message: read from the (masked) arguments when they have that shape. */
function toolDetail(tool: string, args: unknown): ToolDetail {
  if (typeof args !== 'object' || args === null) return { kind: 'args' };
  const fields = args as Record<string, unknown>;
  if (typeof fields['sql'] === 'string' && /sql/i.test(tool)) return { kind: 'sql', sql: fields['sql'] };
  const { to, subject, body } = fields;
  if (typeof to === 'string' && typeof subject === 'string' && typeof body === 'string') {
    return { kind: 'email', to, subject, body };
  }
  return { kind: 'args' };
}

/** Why a run that did not answer ended, after its last step. */
function closingDecision(run: ConsoleRun, steps: readonly ConsoleStep[]): TimelineEntry | null {
  if (run.status === 'running' || run.status === 'succeeded' || run.stopReason === null) return null;
  const last = steps.at(-1);
  const answeredLast = last?.kind === 'final';
  const budget = run.stopReason === 'cost_budget' || run.stopReason === 'token_budget';
  const why =
    budget && !answeredLast
      ? `${STOP_TEXT[run.stopReason]}: no further call was made`
      : STOP_TEXT[run.stopReason];
  // The run's own account of a budget stop (what was left, what the next call needed) says it best.
  const detail = run.stopDetail
    ? `: ${mask(run.stopDetail)}`
    : run.error
      ? ` (${mask(run.error.code)}: ${mask(run.error.message)})`
      : '';
  return { type: 'decision', step: null, text: `${run.status} (${run.stopReason}): ${why}${detail}` };
}
