// The notes routes of the HTTP API (docs/http-api.md#notes), mounted under /v1 behind the bearer check: the same
// controls as `npm run memory` (list, read, forget one, forget an agent's), answering the same JSON of a note
// (noteView). Forgetting all at once takes an agent: no request empties the whole fleet's notes. Without a store
// (none configured), or with one not migrated yet, every route answers 503.
import express, { type RequestHandler, type Router } from 'express';
import { forgetNotesQuerySchema, noteListQuerySchema } from '../src/client/note-schemas.js';
import type { NoteStore } from '../src/notes/note.js';
import { NOTE_ID, noteView } from '../src/notes/note-view.js';
import { toFieldIssues } from '../src/queue/task-schema.js';
import { isConnectionFailure, mysqlErrorCode } from '../src/store/mysql-errors.js';

/** What the routes need of a NoteStore. */
export type NotesDesk = Pick<NoteStore, 'list' | 'get' | 'forget' | 'forgetAll'>;

/**
 * The store lost, or without agent_notes (not migrated yet): 503, try again later, as for Redis; the API's log
 * says which (the error handler logs anything else as a 500).
 */
const guarded =
  (handler: RequestHandler): RequestHandler =>
  async (req, res, next) => {
    try {
      await handler(req, res, next);
    } catch (error) {
      const noTable = mysqlErrorCode(error) === 'ER_NO_SUCH_TABLE';
      if (!noTable && !isConnectionFailure(error)) throw error;
      const message = noTable ? 'the store has no agent_notes table yet' : 'the store is unreachable';
      res.status(503).json({ error: 'unavailable', message });
    }
  };

/** A path parameter that can name a note (any other names none: 404). */
const idOf = (id: unknown): string | undefined =>
  typeof id === 'string' && NOTE_ID.test(id) ? id : undefined;

export function notesRouter(notes: NotesDesk | undefined): Router {
  const router = express.Router();
  if (!notes) {
    router.use('/notes', (_req, res) => {
      res.status(503).json({ error: 'unavailable' });
    });
    return router;
  }

  router.get(
    '/notes',
    guarded(async (req, res) => {
      const query = noteListQuerySchema.safeParse(req.query);
      if (!query.success) {
        res.status(400).json({ error: 'invalid_query', issues: toFieldIssues(query.error.issues) });
        return;
      }
      res.json({ notes: (await notes.list(query.data)).map(noteView) });
    }),
  );

  router.delete(
    '/notes',
    guarded(async (req, res) => {
      const query = forgetNotesQuerySchema.safeParse(req.query);
      if (!query.success) {
        res.status(400).json({ error: 'invalid_query', issues: toFieldIssues(query.error.issues) });
        return;
      }
      res.json({ forgotten: await notes.forgetAll(query.data) });
    }),
  );

  router.get(
    '/notes/:id',
    guarded(async (req, res) => {
      const id = idOf(req.params['id']);
      const note = id === undefined ? null : await notes.get(id);
      if (!note) {
        res.status(404).json({ error: 'not_found' });
        return;
      }
      res.json(noteView(note));
    }),
  );

  router.delete(
    '/notes/:id',
    guarded(async (req, res) => {
      const id = idOf(req.params['id']);
      if (id === undefined || !(await notes.forget(id))) {
        res.status(404).json({ error: 'not_found' });
        return;
      }
      res.status(204).end();
    }),
  );

  return router;
}
