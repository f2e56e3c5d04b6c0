// Fact notes derived from a finished run's trace, without a model call (docs/notes.md): what a tool that declares
// its results facts (`keepsFacts: true` in its definition: the data's shape, which changes rarely) returned to a
// successful call. The result is text from a tool, hostile like any: it is kept as data with its source, quoted
// as one bounded JSON string in fixed wording (`describe_table returned, for {"table":"orders"}: "…"`), never as
// an instruction.
import type { StepTrace } from '../kernel/types.js';
import { NOTE_MAX_CHARS, type NoteDraft } from './note.js';
import { argsJson, NOTES_TOOLS, quote, TOOL_NAME, type DeriveContext } from './derived-parts.js';

/** Facts derived from one run at most. */
export const MAX_FACTS_PER_RUN = 3;

/**
 * At most MAX_FACTS_PER_RUN fact notes, one per tool and arguments (the latest result of a call made again), in
 * the order the run first made those calls. Only successful calls of tools `keepsFacts` names; none of the
 * notes tools' own.
 */
export function deriveFactNotes(steps: readonly StepTrace[], context: DeriveContext): NoteDraft[] {
  const keeps = context.keepsFacts;
  if (!keeps) return [];
  const facts = new Map<string, NoteDraft>();
  for (const step of [...steps].sort((a, b) => a.step - b.step)) {
    for (const [index, action] of step.actions.entries()) {
      if (!action.ok || !TOOL_NAME.test(action.tool) || NOTES_TOOLS.has(action.tool) || !keeps(action.tool))
        continue;
      const observation = step.observations[index];
      if (observation === undefined || observation.trim() === '') continue;
      const prefix = factPrefix(action.tool, action.args);
      if (!facts.has(prefix) && facts.size >= MAX_FACTS_PER_RUN) continue;
      facts.set(prefix, {
        agent: context.agent,
        tenant: context.tenant,
        kind: 'fact',
        text: factText(prefix, observation),
        sourceJobId: context.jobId,
        sourceStep: step.step,
        expiresAt: context.expiresAt,
      });
    }
  }
  return [...facts.values()];
}

/**
 * The facts a run was shown that its own calls contradict: a successful call of the same tool with the same
 * arguments (its latest) returned something else (the table changed). The run's end keeps the new result in their
 * place. A fact whose arguments the note shows cut is compared with every call sharing that start: left alone.
 */
export function contradictedFacts(
  steps: readonly StepTrace[],
  shown: readonly { id: string; kind: string; text: string }[],
): string[] {
  const facts = shown.filter((note) => note.kind === 'fact');
  if (facts.length === 0) return [];
  const latest = new Map<string, { text: string; whole: boolean }>();
  for (const step of [...steps].sort((a, b) => a.step - b.step)) {
    for (const [index, action] of step.actions.entries()) {
      const observation = step.observations[index];
      if (!action.ok || observation === undefined || observation.trim() === '') continue;
      const prefix = factPrefix(action.tool, action.args);
      latest.set(prefix, { text: factText(prefix, observation), whole: argsJson(action.args).whole });
    }
  }
  return facts
    .filter((note) =>
      [...latest].some(
        ([prefix, fact]) => fact.whole && note.text.startsWith(prefix) && note.text !== fact.text,
      ),
    )
    .map((note) => note.id);
}

/** `describe_table returned, for {"table":"orders"}: ` */
function factPrefix(tool: string, args: unknown): string {
  return `${tool} returned, for ${argsJson(args).text}: `;
}

/** The prefix and the result as one JSON string, cut to keep the note within NOTE_MAX_CHARS. */
function factText(prefix: string, observation: string): string {
  return `${prefix}${quote(observation, NOTE_MAX_CHARS - prefix.length)}`;
}
