// The parts every note derived from a run's trace shares (derive-notes.ts, derive-facts.ts): whose notes they are,
// which tools a note may name, and how data from a tool or the model is quoted into a note: bounded JSON, escaped
// so nothing inside can end the literal, start a line, or form a tag or a special token.
import { boundedJson } from '../kernel/bounded-json.js';
import { escapeUnsafeJson, NOTES_TOOL_NAMES } from '../kernel/recalled-notes.js';

export interface DeriveContext {
  agent: string;
  /** '' for a task without a tenant. */
  tenant: string;
  /** The run's job: each note's source. */
  jobId: string;
  expiresAt: Date;
  /**
   * Whether a tool's successful results are kept as facts (its definition's `keepsFacts`); no tool's when absent.
   */
  keepsFacts?: (tool: string) => boolean;
}

/** Tool names a note may name (anything else is left out rather than quoted). */
export const TOOL_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
/**
 * The notes tools' own calls make no note: a correction of a keep_note call would carry a model's note as if the
 * trace had shown it, and one of a recall_notes call says nothing about the data or the tools; nor does a fact of
 * either (a recalled note kept again as a fact would live on past its own expiry and weight).
 */
export const NOTES_TOOLS: ReadonlySet<string> = new Set(NOTES_TOOL_NAMES);
/** Characters of a call's arguments as a note shows them, quotes and escapes included. */
export const ARGS_MAX_CHARS = 125;

/**
 * The arguments as compact JSON when they fit, else their JSON text as a quoted string, cut to fit; whole when
 * nothing of them was cut.
 */
export function argsJson(args: unknown): { text: string; whole: boolean } {
  const json = boundedJson(args ?? null, ARGS_MAX_CHARS);
  if (json.complete) {
    const safe = escapeUnsafeJson(json.text);
    if (safe.length <= ARGS_MAX_CHARS) return { text: safe, whole: true };
  }
  const quoted = quote(json.text, ARGS_MAX_CHARS);
  return { text: quoted, whole: json.complete && JSON.parse(quoted) === json.text };
}

/**
 * Text as a JSON string literal of at most maxChars characters, quotes and escapes included, cut (with …) to fit.
 * Nothing inside can end the literal, start a line, or form a tag or special token (`<|im_start|>`, `</tool>`).
 */
export function quote(text: string, maxChars: number): string {
  let cut = Math.min(text.length, maxChars);
  for (;;) {
    const piece = cut < text.length ? `${safeSlice(text, cut)}…` : text;
    const quoted = escapeUnsafeJson(JSON.stringify(piece));
    if (quoted.length <= maxChars || cut === 0) return quoted;
    cut = Math.max(0, Math.min(cut - 1, Math.floor(cut * 0.85)));
  }
}

/** The first `length` characters, one fewer when that would split a surrogate pair. */
function safeSlice(text: string, length: number): string {
  const piece = text.slice(0, length);
  return /[\uD800-\uDBFF]$/.test(piece) ? piece.slice(0, -1) : piece;
}
