// Correction notes derived from a finished run's trace, without a model call (docs/notes.md): a call of a tool
// that failed, followed in a later step by a call of the same tool with other arguments that succeeded, is worth
// remembering as "this failed with that error; it worked with those arguments". The error text comes from a tool
// and the arguments from the model: both are hostile. Each is bounded and quoted as JSON (quotes, newlines,
// control characters and angle brackets escaped), so a note is one line of fixed prose around quoted data; it
// states what happened and never tells the model what to do. The facts a run's tools returned: derive-facts.ts.
import { boundedJson } from '../kernel/bounded-json.js';
import type { StepTrace } from '../kernel/types.js';
import { contradictedFacts, deriveFactNotes } from './derive-facts.js';
import { NOTE_MAX_CHARS, type NoteDraft } from './note.js';
import { argsJson, NOTES_TOOLS, quote, TOOL_NAME, type DeriveContext } from './derived-parts.js';

export type { DeriveContext };

/** Every note a run's trace shows: its corrections, then the facts its opted-in tools returned. */
export function deriveNotes(steps: readonly StepTrace[], context: DeriveContext): NoteDraft[] {
  return [...deriveCorrectionNotes(steps, context), ...deriveFactNotes(steps, context)];
}

/** Notes derived from one run at most. */
export const MAX_CORRECTIONS_PER_RUN = 3;
/** Characters of each quoted part, quotes and escapes included: the note stays within NOTE_MAX_CHARS. */
const ERROR_MAX_CHARS = 130;
/** Characters of two calls' arguments compared (beyond, arguments that long are taken as equal). */
const COMPARE_MAX_CHARS = 20_000;

/**
 * Failures that say nothing about the arguments: the tool or its server was away, slow or interrupted, the call
 * was refused by a person or by the kernel. Another call succeeding after them is no correction.
 */
const NOT_ABOUT_ARGUMENTS = new Set([
  'timeout',
  'aborted',
  'unknown_tool',
  'tool_unavailable',
  'uncertain_effects',
  'repeated_action',
  'output_missing',
  'system',
  'unexpected',
  'reject',
  'rejected',
  'expired',
  'superseded',
  'mcp_tool_gone',
  'note_limit',
]);

interface Call {
  step: number;
  tool: string;
  /** The arguments as the note shows them (bounded). */
  args: string;
  /** Whether `args` shows them whole (not cut): only then does equal text mean the same arguments. */
  argsWhole: boolean;
  /** Their JSON up to COMPARE_MAX_CHARS, to tell a correction from the same call made again. */
  key: string;
  ok: boolean;
  errorCode: string | null;
  observation: string;
}

/** At most MAX_CORRECTIONS_PER_RUN correction notes, in the order the run made the corrections. */
export function deriveCorrectionNotes(steps: readonly StepTrace[], context: DeriveContext): NoteDraft[] {
  const failed = new Map<string, Call>();
  const notes: NoteDraft[] = [];
  const seen = new Set<string>();
  for (const call of callsOf(steps)) {
    if (notes.length >= MAX_CORRECTIONS_PER_RUN) break;
    if (!TOOL_NAME.test(call.tool) || NOTES_TOOLS.has(call.tool)) continue;
    if (!call.ok) {
      if (aboutArguments(call.errorCode)) failed.set(call.tool, call);
      continue;
    }
    const failure = failed.get(call.tool);
    // A call made in the same step as the failure was not written knowing it failed.
    if (!failure || failure.step >= call.step) continue;
    failed.delete(call.tool);
    // The same arguments working later: the failure was not theirs.
    if (failure.key === call.key) continue;
    const text = correctionText(failure, call);
    if (seen.has(text)) continue;
    seen.add(text);
    notes.push({
      agent: context.agent,
      tenant: context.tenant,
      kind: 'correction',
      text,
      sourceJobId: context.jobId,
      sourceStep: call.step,
      expiresAt: context.expiresAt,
    });
  }
  return notes;
}

/**
 * The notes a run contradicted, wrong now (the schema changed, the data moved) and dropped rather than recalled
 * again: a correction saying a tool "worked with" some arguments, when a call of that tool with those very
 * arguments failed in this run (for a reason about them); a fact of a call this run made again, with another
 * result (derive-facts.ts).
 */
export function contradictedNotes(
  steps: readonly StepTrace[],
  shown: readonly { id: string; kind: string; text: string }[],
): string[] {
  return [...contradictedCorrections(steps, shown), ...contradictedFacts(steps, shown)];
}

function contradictedCorrections(
  steps: readonly StepTrace[],
  shown: readonly { id: string; kind: string; text: string }[],
): string[] {
  const corrections = shown.filter((note) => note.kind === 'correction');
  if (corrections.length === 0) return [];
  // A call whose arguments a note would show cut says nothing about a note's: another call can share their start.
  const failed = [...callsOf(steps)].filter(
    (call) => !call.ok && call.argsWhole && aboutArguments(call.errorCode),
  );
  return corrections
    .filter((note) =>
      failed.some(
        (call) =>
          note.text.startsWith(`${call.tool} failed with: `) &&
          note.text.endsWith(`; it worked with ${call.args}.`),
      ),
    )
    .map((note) => note.id);
}

function aboutArguments(code: string | null): boolean {
  if (code === null) return true;
  return !NOT_ABOUT_ARGUMENTS.has(code) && !/_(unavailable|busy)$/.test(code);
}

function* callsOf(steps: readonly StepTrace[]): Generator<Call> {
  const ordered = [...steps].sort((a, b) => a.step - b.step);
  for (const step of ordered) {
    for (const [index, action] of step.actions.entries()) {
      const shown = argsJson(action.args);
      yield {
        step: step.step,
        tool: action.tool,
        args: shown.text,
        argsWhole: shown.whole,
        key: boundedJson(action.args ?? null, COMPARE_MAX_CHARS).text,
        ok: action.ok,
        errorCode: action.errorCode,
        observation: step.observations[index] ?? '',
      };
    }
  }
}

/** `tool failed with: "error" when called with {…}; it worked with {…}.` */
function correctionText(failure: Call, success: Call): string {
  const text =
    `${failure.tool} failed with: ${quote(errorLine(failure.observation), ERROR_MAX_CHARS)}` +
    ` when called with ${failure.args}; it worked with ${success.args}.`;
  // The parts are bounded so this holds; kept as a guard, cutting the quoted data rather than the prose.
  return text.length <= NOTE_MAX_CHARS ? text : `${text.slice(0, NOTE_MAX_CHARS - 1)}…`;
}

/** The error's first non-empty line, without the kernel's `Error: ` prefix. */
function errorLine(observation: string): string {
  const message = observation.replace(/^Error(?: \(after \d+ attempts\))?: /, '');
  return (
    message
      .split(/\r\n|\r|\n/)
      .map((line) => line.trim())
      .find((line) => line !== '') ?? '(no message)'
  );
}
