// The notes' paths of the OpenAPI document (notes-routes.ts; docs/http-api.md#notes).
import { error, json, ref, V1_ERRORS, type JsonObject } from './openapi-parts.js';

const NOTES_ERRORS = {
  ...V1_ERRORS,
  '503': error(
    'Redis or the store is unreachable, the store has no `agent_notes` table yet, or this API keeps no notes ' +
      '(`unavailable`).',
  ),
};

const agentName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' };
const tenantName = {
  type: 'string',
  pattern: '^([A-Za-z0-9_.@-]{1,64})?$',
  description: 'empty for the notes of tasks without a tenant',
};

function query(name: string, required: boolean, description: string, schema: JsonObject): JsonObject {
  return { name, in: 'query', required, description, schema };
}

const noteId = {
  name: 'noteId',
  in: 'path',
  required: true,
  description: 'As GET /v1/notes lists it (`note_…`).',
  schema: { type: 'string', minLength: 1, maxLength: 40 },
};

const badQuery = error('A bad or unknown query parameter (`invalid_query`, naming it in `issues`).');

export function notePaths(): JsonObject {
  return {
    '/v1/notes': {
      get: {
        operationId: 'listNotes',
        summary: 'The notes agents keep across tasks',
        description: 'Live notes (not expired), newest first; the same JSON as `npm run memory -- list`.',
        tags: ['notes'],
        parameters: [
          query('agent', false, 'Only this agent’s notes.', agentName),
          query(
            'tenant',
            false,
            'Only the notes of this tenant’s tasks (empty: of tasks without one).',
            tenantName,
          ),
          query('limit', false, 'At most this many (default 100).', {
            type: 'string',
            pattern: '^[0-9]{1,4}$',
            description: '1 to 1000',
          }),
        ],
        responses: {
          '200': json(ref('Notes'), 'The notes, newest first.'),
          '400': badQuery,
          ...NOTES_ERRORS,
        },
      },
      delete: {
        operationId: 'forgetNotes',
        summary: 'Forget every note of an agent (of one tenant)',
        tags: ['notes'],
        parameters: [
          query(
            'agent',
            true,
            'The agent whose notes go: required, so no request empties every agent’s.',
            agentName,
          ),
          query(
            'tenant',
            false,
            'Only the notes of this tenant’s tasks (empty: of tasks without one).',
            tenantName,
          ),
        ],
        responses: {
          '200': json(ref('NotesForgotten'), 'How many notes were removed (0 when there were none).'),
          '400': error(
            'No `agent`, or a bad or unknown query parameter (`invalid_query`, naming it in `issues`).',
          ),
          ...NOTES_ERRORS,
        },
      },
    },
    '/v1/notes/{noteId}': {
      get: {
        operationId: 'getNote',
        summary: 'One note, expired or not',
        tags: ['notes'],
        parameters: [noteId],
        responses: {
          '200': json(ref('Note'), 'The note.'),
          '404': error('No such note (`not_found`).'),
          ...NOTES_ERRORS,
        },
      },
      delete: {
        operationId: 'forgetNote',
        summary: 'Forget one note',
        tags: ['notes'],
        parameters: [noteId],
        responses: {
          '204': { description: 'Removed; no body.' },
          '404': error('No such note (`not_found`).'),
          ...NOTES_ERRORS,
        },
      },
    },
  };
}
