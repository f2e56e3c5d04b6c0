// Notes recalled from earlier runs (docs/notes.md) enter a run as what they are: the output of a tool. The kernel
// writes a `recall_notes` call and its result at the head of the transcript, before the model's first turn, in the
// run's protocol, so the notes carry a tool result's authority (below the user's), never the system prompt's or
// the user's: a prompt injection an earlier run read must not become a standing order for every later one.
import type { AssistantMessage, ChatMessage } from './messages.js';
import type { AgentProtocol, PlannedCall } from './protocol.js';
import { truncateChars } from './truncate.js';

export const RECALL_TOOL = 'recall_notes';
/** The tool a model keeps a note of its own with, when its agent lets it (src/worker/run-notes.ts). */
export const KEEP_NOTE_TOOL = 'keep_note';
/** The notes tools' names: an agent with notes on may have no tool of its own by either. */
export const NOTES_TOOL_NAMES: readonly string[] = [RECALL_TOOL, KEEP_NOTE_TOOL];

/** A note as a run is shown it: its id (the trace and the result name it), its kind, when, and its text. */
export interface RecalledNote {
  id: string;
  kind: string;
  /** When it was learned (ISO date), so the model can weigh an old note. */
  learned: string;
  text: string;
}

/** What a new run starts with: the notes recalled for its task. */
export interface RunRecall {
  /** What the notes were looked up for (the task's text, cut). */
  query: string;
  notes: readonly RecalledNote[];
}

/** The call's id in the transcript: the kernel's, never one a model could have given. */
export const RECALL_CALL_ID = 'call_recall_notes_0';

const QUERY_MAX_CHARS = 200;

/**
 * The recall's result: JSON, each note's text a quoted string, so no note can break out of it, and nothing in it a
 * template or a tokenizer could act on (a model's note may hold `<|im_start|>system` or `</tool_call>`; see
 * escapeUnsafeJson). The ids stay out (the trace and the result name them): the model has no use for them, and each
 * costs tokens in every prompt.
 */
export function recallOutput(notes: readonly RecalledNote[]): string {
  return escapeUnsafeJson(
    JSON.stringify({ notes: notes.map((n) => ({ kind: n.kind, learned: n.learned, text: n.text })) }),
  );
}

/**
 * JSON text with the characters a reader or a template could act on written as `\uXXXX`: angle brackets and the
 * ampersand (no tag, no special token such as `<|im_start|>`), DEL and C1 controls, line and paragraph separators,
 * bidirectional overrides, and invisible characters (zero-width, variation selectors, Unicode tags). JSON.stringify already escapes quotes, backslashes and C0 controls; these only occur
 * inside strings, so the JSON reads back the same.
 */
export function escapeUnsafeJson(json: string): string {
  return json.replace(
    // Invisible ones too, which a reader never sees and a model reads: zero-width characters, joiners, the BOM,
    // variation selectors, and Unicode tags (U+E0000-E007F) and the supplementary selectors (U+E0100-E01EF), a
    // surrogate pair each: tags mirror ASCII, and any of them can carry a hidden instruction letter by letter.
    // eslint-disable-next-line no-misleading-character-class -- each selector is matched alone, on purpose
    /[<>&\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufe00-\ufe0f\ufeff]|\udb40[\udc00-\uddef]/g,
    (c) =>
      [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

/** What the notes were looked up for, as the trace shows it: the task's first characters, on one line. */
export function recallQuery(task: string): string {
  return truncateChars(task.replace(/\s+/g, ' ').trim(), QUERY_MAX_CHARS);
}

/**
 * The head of a new run's transcript: the kernel's `recall_notes` call and its result, in the run's protocol. The
 * call has no arguments (the tool's query defaults to the task): the task is in the prompt once, not twice.
 */
export function recallTurn(protocol: AgentProtocol, recall: RunRecall): ChatMessage[] {
  const args = {};
  const call: PlannedCall = { id: RECALL_CALL_ID, name: RECALL_TOOL, args: { ok: true, value: args } };
  const turn: AssistantMessage =
    protocol.name === 'tools'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: RECALL_CALL_ID,
              type: 'function',
              function: { name: RECALL_TOOL, arguments: JSON.stringify(args) },
            },
          ],
        }
      : { role: 'assistant', content: JSON.stringify({ tool: RECALL_TOOL, args }) };
  return [turn, ...protocol.observationMessages([call], [recallOutput(recall.notes)])];
}
