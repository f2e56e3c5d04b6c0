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

/** What a run recalls: the agent and tenant it runs for, and what it is about. */
export interface NoteQuery {
  agent: string;
  tenant: string;
  /** The task's text (or the model's own query through `recall_notes`). */
  text: string;
  /** Its embedding, when an embedding model is configured. */
  embedding?: number[];
  limit: number;
}

/** The fleet's store of notes (MySQL: src/notes/notes-store.ts); an external vector store implements the same. */
export interface NoteStore {
  /** Adds notes; a note whose text the agent and tenant already have is not added twice (its expiry is renewed). */
  add(notes: readonly NoteDraft[]): Promise<string[]>;
  /** The most relevant live notes of the agent and tenant, best first. */
  recall(query: NoteQuery): Promise<Note[]>;
  /** Records that a run used these notes (last used, use count). */
  markUsed(ids: readonly string[]): Promise<void>;
  /** A run that used these notes failed: each is weighted down. */
  weighDown(ids: readonly string[]): Promise<void>;
  list(filter: { agent?: string; tenant?: string; limit?: number }): Promise<Note[]>;
  get(id: string): Promise<Note | null>;
  /** Removes one note; false when there was none. */
  forget(id: string): Promise<boolean>;
  /** Removes every note of an agent (of one tenant when given); how many. */
  forgetAll(filter: { agent: string; tenant?: string }): Promise<number>;
}
