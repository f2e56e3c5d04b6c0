// Notes in MySQL (agent_notes, migration 019; docs/notes.md#the-store). Every read is of exactly one agent and one
// tenant ('' for tasks without one): a note is never recalled for another tenant, nor for none. A note's id derives
// from its agent, tenant and text, and (agent, tenant, text_hash) is unique, so the same note written by two runs
// is one row whose expiry the second renews. Recall ranks by embedding similarity (exact cosine, in process, over
// the agent's most recent notes) when the query has an embedding, else by FULLTEXT relevance; either way × weight,
// and the places left are filled with the agent's other notes, heaviest and most recent first, so a run whose task
// shares no word with its agent's notes (short texts, stopwords, InnoDB's minimum token size) still gets them.
import { createHash } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { AGENT_NAME } from '../kernel/define-agent.js';
import { InputError } from '../kernel/errors.js';
import { TENANT_NAME } from '../queue/tenant-name.js';
import { cosine } from './cosine.js';
import { embeddingBytes } from './embedding-bytes.js';
import {
  NOTE_KINDS,
  noteText,
  type Note,
  type NoteDraft,
  type NoteListFilter,
  type NoteQuery,
  type NoteStore,
} from './note.js';
import { NOTE_COLUMNS, toNote, toScanned } from './note-row.js';

export interface MysqlNoteStoreOptions {
  /** The clock expiry is read against and last use written with. Default: the system's. */
  now?: () => Date;
  /** Most notes a similarity recall scans: the agent and tenant's most recent live ones with an embedding. */
  maxScan?: number;
}

/**
 * Notes scanned by a similarity recall at most, by default: the scope's most recent 1,000 (their embeddings are
 * read as float32 bytes; the recall's figures at this bound are in docs/notes.md#the-store).
 */
export const DEFAULT_MAX_SCAN = 1_000;
export const MAX_RECALL_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1_000;
/** A failed run's notes keep this share of their weight; a note lighter than MIN_WEIGHT is deleted. */
export const WEIGHT_FACTOR = 0.5;
export const MIN_WEIGHT = 0.2;
/** Characters of a query's text FULLTEXT search reads. */
const QUERY_MAX_CHARS = 2_000;
const JOB_ID = /^[\x20-\x7e]{1,64}$/;
const MAX_EMBEDDING_DIMENSIONS = 16_384;
const FLOAT32_MAX = 3.4028234663852886e38;

/** The hash notes are de-duplicated by: of the text with its runs of whitespace made one space. */
export function noteTextHash(text: string): string {
  return createHash('sha256').update(text.normalize('NFC').replace(/\s+/g, ' ').trim()).digest('hex');
}

/** `note_` and 32 hex digits, from the agent, the tenant and the text's hash: one id per note of a scope. */
export function noteIdOf(agent: string, tenant: string, textHash: string): string {
  const digest = createHash('sha256').update(`${agent}\0${tenant}\0${textHash}`).digest('hex');
  return `note_${digest.slice(0, 32)}`;
}

/** Whether a query's agent and tenant could have notes at all (a name no note can have reads none). */
function validScope(agent: string, tenant: string): boolean {
  return AGENT_NAME.test(agent) && (tenant === '' || TENANT_NAME.test(tenant));
}

/**
 * Whether a list's or a forget's agent and tenant (each when given) could name notes. The columns' collation pads
 * with spaces, so `'acme '` would match `'acme'`: a name no note can have must read and remove nothing.
 */
function validFilter(filter: { agent?: string; tenant?: string }): boolean {
  return (
    (filter.agent === undefined || AGENT_NAME.test(filter.agent)) &&
    (filter.tenant === undefined || filter.tenant === '' || TENANT_NAME.test(filter.tenant))
  );
}

function validEmbedding(embedding: readonly number[] | undefined): embedding is number[] {
  return (
    Array.isArray(embedding) &&
    embedding.length > 0 &&
    embedding.length <= MAX_EMBEDDING_DIMENSIONS &&
    // Finite as float32 too, as the store keeps it (embedding-bytes.ts).
    embedding.every((x) => typeof x === 'number' && Number.isFinite(x) && Math.abs(x) <= FLOAT32_MAX)
  );
}

const clamp = (value: number | undefined, fallback: number, max: number): number =>
  value !== undefined && Number.isFinite(value) ? Math.min(max, Math.max(1, Math.floor(value))) : fallback;

interface Row {
  id: string;
  values: unknown[];
}

export class MysqlNoteStore implements NoteStore {
  private readonly now: () => Date;
  private readonly maxScan: number;

  constructor(
    private readonly pool: Pool,
    options: MysqlNoteStoreOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.maxScan = clamp(options.maxScan, DEFAULT_MAX_SCAN, 1_000_000);
  }

  async add(notes: readonly NoteDraft[]): Promise<string[]> {
    if (notes.length === 0) return [];
    const now = this.now();
    const rows = notes.map((draft, index) => this.row(draft, index, now));
    // Expired notes of the scopes written to go first: a note written again after its expiry starts afresh, and
    // the table keeps only what can still be recalled.
    const scopes = new Map(notes.map((draft) => [`${draft.agent}\0${draft.tenant}`, draft]));
    for (const draft of scopes.values()) {
      await this.pool.query('DELETE FROM agent_notes WHERE agent = ? AND tenant = ? AND expires_at <= ?', [
        draft.agent,
        draft.tenant,
        now,
      ]);
    }
    await this.pool.query(
      `INSERT INTO agent_notes (id, agent, tenant, kind, text, text_hash, embedding, source_job_id, source_step,
         created_at, last_used_at, use_count, weight, expires_at)
       VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, 1, ?)').join(', ')}
       ON DUPLICATE KEY UPDATE
         expires_at = GREATEST(expires_at, VALUES(expires_at)),
         embedding = COALESCE(VALUES(embedding), embedding)`,
      rows.flatMap((row) => row.values),
    );
    return rows.map((row) => row.id);
  }

  async recall(query: NoteQuery): Promise<Note[]> {
    if (!validScope(query.agent, query.tenant)) return [];
    const limit = clamp(query.limit, 1, MAX_RECALL_LIMIT);
    const now = this.now();
    const ranked: string[] = [];
    if (validEmbedding(query.embedding))
      ranked.push(...(await this.bySimilarity(query, query.embedding, now)));
    const chosen = ranked.slice(0, limit);
    if (chosen.length < limit) {
      chosen.push(...(await this.byText(query, limit - chosen.length, ranked, now)));
    }
    return this.byIds(chosen);
  }

  async markUsed(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(
      'UPDATE agent_notes SET last_used_at = ?, use_count = use_count + 1 WHERE id IN (?)',
      [this.now(), [...new Set(ids)]],
    );
  }

  async weighDown(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const unique = [...new Set(ids)];
    await this.pool.query('UPDATE agent_notes SET weight = weight * ? WHERE id IN (?)', [
      WEIGHT_FACTOR,
      unique,
    ]);
    await this.pool.query('DELETE FROM agent_notes WHERE id IN (?) AND weight < ?', [unique, MIN_WEIGHT]);
  }

  async list(filter: NoteListFilter): Promise<Note[]> {
    if (!validFilter(filter)) return [];
    const where = ['expires_at > ?'];
    const values: unknown[] = [this.now()];
    if (filter.agent !== undefined) {
      where.push('agent = ?');
      values.push(filter.agent);
    }
    if (filter.tenant !== undefined) {
      where.push('tenant = ?');
      values.push(filter.tenant);
    }
    const limit = clamp(filter.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${NOTE_COLUMNS} FROM agent_notes WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...values, limit],
    );
    return rows.map(toNote);
  }

  async get(id: string): Promise<Note | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${NOTE_COLUMNS} FROM agent_notes WHERE id = ?`,
      [id],
    );
    return rows[0] ? toNote(rows[0]) : null;
  }

  async forget(id: string): Promise<boolean> {
    const [header] = await this.pool.query<ResultSetHeader>('DELETE FROM agent_notes WHERE id = ?', [id]);
    return header.affectedRows > 0;
  }

  async forgetAll(filter: { agent: string; tenant?: string }): Promise<number> {
    if (!validFilter(filter)) return 0;
    const [header] = await this.pool.query<ResultSetHeader>(
      filter.tenant === undefined
        ? 'DELETE FROM agent_notes WHERE agent = ?'
        : 'DELETE FROM agent_notes WHERE agent = ? AND tenant = ?',
      filter.tenant === undefined ? [filter.agent] : [filter.agent, filter.tenant],
    );
    return header.affectedRows;
  }

  /** The draft checked and made a row: its id and the values of the INSERT's placeholders. */
  private row(draft: NoteDraft, index: number, now: Date): Row {
    const refuse = (what: string): never => {
      throw new InputError('note_invalid', `note ${index}: ${what}`);
    };
    if (!AGENT_NAME.test(draft.agent)) refuse('agent must be an agent name');
    if (draft.tenant !== '' && !TENANT_NAME.test(draft.tenant))
      refuse("tenant must be a tenant name or '' for none");
    if (!NOTE_KINDS.includes(draft.kind)) refuse(`kind must be one of ${NOTE_KINDS.join(', ')}`);
    if (!JOB_ID.test(draft.sourceJobId)) refuse('sourceJobId must be 1-64 printable ASCII characters');
    if (!Number.isSafeInteger(draft.sourceStep) || draft.sourceStep < 0)
      refuse('sourceStep must be a whole number from 0');
    if (!(draft.expiresAt instanceof Date) || Number.isNaN(draft.expiresAt.getTime()))
      refuse('expiresAt must be a date');
    if (draft.embedding !== undefined && !validEmbedding(draft.embedding))
      refuse(`embedding must be 1-${MAX_EMBEDDING_DIMENSIONS} finite numbers`);
    const text = noteText(draft.text);
    if (text.trim() === '') refuse('text is empty');
    const hash = noteTextHash(text);
    const id = noteIdOf(draft.agent, draft.tenant, hash);
    return {
      id,
      values: [
        id,
        draft.agent,
        draft.tenant,
        draft.kind,
        text,
        hash,
        draft.embedding === undefined ? null : embeddingBytes(draft.embedding),
        draft.sourceJobId,
        draft.sourceStep,
        now,
        draft.expiresAt,
      ],
    };
  }

  /**
   * The ids of the scope's most recent live notes with an embedding (maxScan at most), best first by cosine ×
   * weight; a note whose embedding cannot be compared (another model's dimensions) is left out.
   */
  private async bySimilarity(query: NoteQuery, embedding: number[], now: Date): Promise<string[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT id, embedding, weight FROM agent_notes
       WHERE agent = ? AND tenant = ? AND expires_at > ? AND embedding IS NOT NULL
       ORDER BY created_at DESC, id DESC LIMIT ?`,
      [query.agent, query.tenant, now, this.maxScan],
    );
    const scored: { id: string; score: number; order: number }[] = [];
    rows.forEach((raw, order) => {
      const note = toScanned(raw);
      const similarity = note.embedding === null ? null : cosine(embedding, note.embedding);
      if (similarity !== null) scored.push({ id: note.id, score: similarity * note.weight, order });
    });
    scored.sort((a, b) => b.score - a.score || a.order - b.order);
    return scored.map((note) => note.id);
  }

  /**
   * Up to `limit` ids of the scope's live notes but `exclude`: those FULLTEXT matches with the query's text, by
   * relevance × weight, then the others, heaviest and most recently used or written first.
   */
  private async byText(
    query: NoteQuery,
    limit: number,
    exclude: readonly string[],
    now: Date,
  ): Promise<string[]> {
    const scope = 'agent = ? AND tenant = ? AND expires_at > ?';
    const scopeValues = [query.agent, query.tenant, now];
    const ids: string[] = [];
    const text = query.text.slice(0, QUERY_MAX_CHARS).trim();
    if (text !== '') {
      const notIn = exclude.length > 0 ? ' AND id NOT IN (?)' : '';
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT id, MATCH(text) AGAINST(? IN NATURAL LANGUAGE MODE) * weight AS score FROM agent_notes
         WHERE ${scope}${notIn} AND MATCH(text) AGAINST(? IN NATURAL LANGUAGE MODE)
         ORDER BY score DESC, created_at DESC, id DESC LIMIT ?`,
        [text, ...scopeValues, ...(exclude.length > 0 ? [exclude] : []), text, limit],
      );
      ids.push(...rows.map((row) => String(row['id'])));
    }
    if (ids.length >= limit) return ids;
    const skip = [...exclude, ...ids];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT id FROM agent_notes WHERE ${scope}${skip.length > 0 ? ' AND id NOT IN (?)' : ''}
       ORDER BY weight DESC, COALESCE(last_used_at, created_at) DESC, id DESC LIMIT ?`,
      [...scopeValues, ...(skip.length > 0 ? [skip] : []), limit - ids.length],
    );
    return [...ids, ...rows.map((row) => String(row['id']))];
  }

  /** The notes of these ids, in this order. */
  private async byIds(ids: readonly string[]): Promise<Note[]> {
    if (ids.length === 0) return [];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${NOTE_COLUMNS} FROM agent_notes WHERE id IN (?)`,
      [ids],
    );
    const notes = new Map(rows.map((raw) => [String(raw['id']), toNote(raw)]));
    return ids.flatMap((id) => notes.get(id) ?? []);
  }
}
