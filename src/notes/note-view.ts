// A note as every reader outside the store sees it: `npm run memory` prints it, the HTTP API answers it and the
// client parses it (src/client/note-schemas.ts, checked to agree). Its embedding's size, never its numbers: they
// mean nothing to a person and would make a list of notes megabytes long.
import type { Note } from './note.js';

/** Note ids are `note_` and 32 hex digits; any printable ASCII up to the column's 40 is looked up. */
export const NOTE_ID = /^[\x21-\x7e]{1,40}$/;

export function noteView(note: Note) {
  return {
    id: note.id,
    agent: note.agent,
    tenant: note.tenant,
    kind: note.kind,
    text: note.text,
    createdAt: note.createdAt.toISOString(),
    lastUsedAt: note.lastUsedAt?.toISOString() ?? null,
    useCount: note.useCount,
    weight: note.weight,
    expiresAt: note.expiresAt.toISOString(),
    source: { jobId: note.sourceJobId, step: note.sourceStep },
    embeddingDimensions: note.embedding?.length ?? null,
  };
}

export type NoteView = ReturnType<typeof noteView>;
