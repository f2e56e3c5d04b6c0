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
      const prefix = `${action.tool} returned, for ${argsJson(action.args).text}: `;
      if (!facts.has(prefix) && facts.size >= MAX_FACTS_PER_RUN) continue;
      facts.set(prefix, {
        agent: context.agent,
        tenant: context.tenant,
        kind: 'fact',
        text: `${prefix}${quote(observation, NOTE_MAX_CHARS - prefix.length)}`,
        sourceJobId: context.jobId,
        sourceStep: step.step,
        expiresAt: context.expiresAt,
      });
    }
  }
  return [...facts.values()];
}
