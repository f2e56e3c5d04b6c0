// An agent_notes row as the store reads it: every column checked (a row that does not match is a StoreError,
// never a wrong type), the embedding read from its float32 bytes (embedding-bytes.ts).
import type { RowDataPacket } from 'mysql2/promise';
import { z } from 'zod';
import { parseRow } from '../store/rows.js';
import { embeddingOf } from './embedding-bytes.js';
import { NOTE_KINDS, type Note, type NoteKind } from './note.js';

const TABLE = 'agent_notes';

/** Every column but the hash, which only de-duplication reads. */
export const NOTE_COLUMNS = `id, agent, tenant, kind, text, embedding, source_job_id, source_step, created_at,
  last_used_at, use_count, weight, expires_at`;

const noteColumns = z.object({
  id: z.string(),
  agent: z.string(),
  tenant: z.string(),
  kind: z.enum(NOTE_KINDS as [NoteKind, ...NoteKind[]]),
  text: z.string(),
  embedding: z.instanceof(Uint8Array).nullable(),
  source_job_id: z.string(),
  source_step: z.number().int(),
  created_at: z.date(),
  last_used_at: z.date().nullable(),
  use_count: z.number().int(),
  weight: z.number(),
  expires_at: z.date(),
});

export function toNote(raw: RowDataPacket): Note {
  const row = parseRow(noteColumns, raw, TABLE);
  return {
    id: row.id,
    agent: row.agent,
    tenant: row.tenant,
    kind: row.kind,
    text: row.text,
    sourceJobId: row.source_job_id,
    sourceStep: row.source_step,
    ...embeddingField(row.embedding),
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    useCount: row.use_count,
    weight: row.weight,
  };
}

/** A stored embedding as a note's field; none when its bytes cannot be one. */
function embeddingField(bytes: Uint8Array | null): { embedding?: number[] } {
  const embedding = bytes === null ? null : embeddingOf(bytes);
  return embedding === null ? {} : { embedding: Array.from(embedding) };
}

const embeddingColumns = z.object({
  id: z.string(),
  embedding: z.instanceof(Uint8Array),
  weight: z.number(),
});

/** The columns the similarity scan reads: the note's id, embedding (null when its bytes cannot be one) and weight. */
export function toScanned(raw: RowDataPacket): {
  id: string;
  embedding: Float32Array | null;
  weight: number;
} {
  const row = parseRow(embeddingColumns, raw, TABLE);
  return { id: row.id, embedding: embeddingOf(row.embedding), weight: row.weight };
}
