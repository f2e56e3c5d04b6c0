// The API's notes over MYSQL_URL. The pool is made on first use, like StoreApprovalDesk's, so the API starts and
// serves tasks while the store is down (the notes routes answer 503 meanwhile); a failed attempt is forgotten, so
// the next request tries again.
import type { Pool } from 'mysql2/promise';
import type { Note, NoteListFilter } from '../src/notes/note.js';
import { MysqlNoteStore } from '../src/notes/notes-store.js';
import { createStorePool } from '../src/store/pool.js';
import type { NotesDesk } from './notes-routes.js';

export class StoreNotes implements NotesDesk {
  private pool: Promise<Pool> | undefined;

  constructor(private readonly mysqlUrl: string) {}

  async list(filter: NoteListFilter): Promise<Note[]> {
    return (await this.open()).list(filter);
  }

  async get(id: string): Promise<Note | null> {
    return (await this.open()).get(id);
  }

  async forget(id: string): Promise<boolean> {
    return (await this.open()).forget(id);
  }

  async forgetAll(filter: { agent: string; tenant?: string }): Promise<number> {
    return (await this.open()).forgetAll(filter);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await (await pool.catch(() => undefined))?.end();
  }

  private async open(): Promise<MysqlNoteStore> {
    this.pool ??= createStorePool(this.mysqlUrl, { connectionLimit: 2, connectTimeout: 3_000 }).catch(
      (error: unknown) => {
        this.pool = undefined;
        throw error;
      },
    );
    return new MysqlNoteStore(await this.pool);
  }
}
