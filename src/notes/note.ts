// Notes across tasks (docs/notes.md): what an agent learned in one run, kept for the next ones of the same agent
// and tenant. A note is data about the world or the agent's own mistakes, never an instruction: it reaches a later
// run's model as the output of a `recall_notes` call, below the user's authority.

/** Where a note came from. */
export type NoteKind =
  /** A fact about the data or tools, from a tool's result (quoted as data). */
  | 'fact'
  /** A failed call followed by a corrected one of the same tool, derived from the trace without a model call. */
  | 'correction'
  /** Written by the model within its run's budget, when its agent asks for it. */
  | 'model';

export const NOTE_KINDS: readonly NoteKind[] = ['fact', 'correction', 'model'];

export interface NoteDraft {
  agent: string;
  /** '' for a task without a tenant: a note is never recalled for another tenant, nor for none. */
  tenant: string;
  kind: NoteKind;
  /** At most NOTE_MAX_CHARS characters. */
  text: string;
  sourceJobId: string;
  sourceStep: number;
  /** Absent when no embedding model is configured (FULLTEXT search then). */
  embedding?: number[];
  expiresAt: Date;
}

export interface Note extends NoteDraft {
  id: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  useCount: number;
  /** 1 for a new note; lowered each time a run that used it failed. Recall ranks by relevance × weight. */
  weight: number;
}

export const NOTE_MAX_CHARS = 500;

// C0 controls but newline (tab and CR are turned into a space and a newline first), DEL, C1, the bidirectional
// overrides and isolates that reorder what is shown, and lone surrogates.
const UNSAFE =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A note's text as it is stored: control characters but newline removed (a tab becomes a space, CR LF and CR a
 * newline), and at most NOTE_MAX_CHARS characters, never cutting a surrogate pair. The text is data: nothing else
 * about it is changed.
 */
export function noteText(text: string): string {
  const clean = text.replace(/\r\n?/g, '\n').replaceAll('\t', ' ').replace(UNSAFE, '');
  if (clean.length <= NOTE_MAX_CHARS) return clean;
  const cut = clean.slice(0, NOTE_MAX_CHARS);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** What a run recalls: the agent and tenant it runs for, and what it is about. */
export interface NoteQuery {
  agent: string;
  tenant: string;
  /** The task's text (or the model's own query through `recall_notes`). */
  text: string;
  /** Its embedding, when an embedding model is configured. */
  embedding?: number[];
  /** How many notes at most (held to 1..100). */
  limit: number;
}

/** Which notes to list: of one agent, of one tenant ('' for tasks without one), or all. */
export interface NoteListFilter {
  agent?: string;
  tenant?: string;
  limit?: number;
}

/** The fleet's store of notes (MySQL: src/notes/notes-store.ts); an external vector store implements the same. */
export interface NoteStore {
  /**
   * Adds notes; a note whose text the agent and tenant already have is not added twice (its expiry is renewed).
   * Answers each draft's note id, in order: the existing note's for a duplicate.
   */
  add(notes: readonly NoteDraft[]): Promise<string[]>;
  /**
   * Up to `limit` live notes of exactly this agent and tenant, best first: by embedding similarity × weight when
   * the query has an embedding, else by FULLTEXT relevance × weight; the places left are filled with the scope's
   * other notes, heaviest and most recently used first (so a run gets its agent's notes even when no word matches).
   */
  recall(query: NoteQuery): Promise<Note[]>;
  /** Records that a run used these notes (last used, use count). */
  markUsed(ids: readonly string[]): Promise<void>;
  /** A run that used these notes failed: each is weighted down. */
  weighDown(ids: readonly string[]): Promise<void>;
  /** Live notes (not expired), newest first; `limit` defaults to 100 and is held to 1..1,000. */
  list(filter: NoteListFilter): Promise<Note[]>;
  /** One note, expired or not; null when there is none. */
  get(id: string): Promise<Note | null>;
  /** Removes one note; false when there was none. */
  forget(id: string): Promise<boolean>;
  /** Removes every note of an agent (of one tenant when given); how many. */
  forgetAll(filter: { agent: string; tenant?: string }): Promise<number>;
}
