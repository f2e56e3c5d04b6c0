// Notes for other services, over the HTTP API (docs/http-api.md#notes) with the global fetch: list the notes
// agents keep across tasks, read one, forget one or all of an agent's. It needs no Redis and no store, only the
// API's URL and a token. A note's text is data a tool or a model wrote: show it escaped. Each refusal is an error
// of its own class (FleetApprovals' way), so a caller branches on the class, never on a message.
import type { z } from 'zod';
import type { FieldIssue } from '../queue/field-issue.js';
import { noteListSchema, noteSchema, notesForgottenSchema } from './note-schemas.js';
import {
  answerOf,
  FleetApiError,
  FleetApiTransport,
  withQuery,
  type ErrorAnswer,
  type FleetApiOptions,
} from './fleet-api.js';

export type NoteJson = z.infer<typeof noteSchema>;

export interface NotesFilter {
  agent?: string;
  /** '' for the notes of tasks without a tenant. */
  tenant?: string;
  /** 1 to 1,000; default 100. Newest first. */
  limit?: number;
}

/** 404: no note with that id (forgotten already, or never kept). */
export class NoteNotFoundError extends FleetApiError {
  override readonly name = 'NoteNotFoundError';
}

/** 400: a filter the API refused, `issues` naming each parameter (`agent`, `limit`). Nothing was forgotten. */
export class NotesRefusedError extends FleetApiError {
  override readonly name = 'NotesRefusedError';
  constructor(
    code: string,
    readonly issues: FieldIssue[],
  ) {
    super(
      400,
      code,
      `refused: ${issues.map((issue) => `${issue.path || '(query)'}: ${issue.message}`).join('; ')}`,
    );
  }
}

export class FleetNotes {
  private readonly api: FleetApiTransport;

  constructor(options: FleetApiOptions) {
    this.api = new FleetApiTransport(options, refusalOf);
  }

  /** Live notes (not expired), newest first. */
  async list(filter: NotesFilter = {}): Promise<NoteJson[]> {
    return answerOf(noteListSchema, await this.api.request('GET', withQuery('/v1/notes', filter))).notes;
  }

  /** One note, expired or not. */
  async get(id: string): Promise<NoteJson> {
    return answerOf(noteSchema, await this.api.request('GET', notePath(id)));
  }

  /** Removes one note; NoteNotFoundError when there was none. */
  async forget(id: string): Promise<void> {
    await this.api.request('DELETE', notePath(id));
  }

  /** Removes every note of an agent (of one tenant when given); answers how many. */
  async forgetAll(scope: { agent: string; tenant?: string }): Promise<number> {
    const body = await this.api.request('DELETE', withQuery('/v1/notes', scope));
    return answerOf(notesForgottenSchema, body).forgotten;
  }
}

const notePath = (id: string) => `/v1/notes/${encodeURIComponent(id)}`;

function refusalOf({ status, code, issues, what }: ErrorAnswer): FleetApiError | undefined {
  if (status === 404) return new NoteNotFoundError(status, code, `${what}: no such note (404)`);
  if (status === 400 && issues) return new NotesRefusedError(code, issues as FieldIssue[]);
  return undefined;
}
