// Notes over HTTP (docs/http-api.md#notes), as zod schemas: the API checks its query strings with them, the
// OpenAPI document is generated from them, and FleetNotes parses answers with them. A note is the JSON
// `npm run memory` prints (src/notes/note-view.ts); a check below fails the type check if the two drift apart.
import { z } from 'zod';
import { AGENT_NAME } from '../kernel/define-agent.js';
import { NOTE_KINDS, type NoteKind } from '../notes/note.js';
import type { NoteView } from '../notes/note-view.js';
import { TENANT_NAME, TENANT_NAME_RULE } from '../queue/tenant-name.js';
import { agree, type Known, type Same } from '../util/schema-agreement.js';

const isoTime = z.string().describe('ISO 8601');

export const noteSchema = z
  .looseObject({
    id: z.string().describe('`note_` and 32 hex digits'),
    agent: z.string(),
    tenant: z.string().describe('`""` for the notes of tasks without a tenant'),
    kind: z.enum(NOTE_KINDS as [NoteKind, ...NoteKind[]]),
    text: z.string().describe('data a tool or a model wrote, at most 500 characters: show it escaped'),
    createdAt: isoTime,
    lastUsedAt: isoTime.nullable(),
    useCount: z.number().int(),
    weight: z.number().describe('1 for a new note, halved by each failed run that used it'),
    expiresAt: isoTime,
    source: z
      .looseObject({ jobId: z.string(), step: z.number().int() })
      .describe('the run and step it came from'),
    embeddingDimensions: z.number().int().nullable().describe('null without an embedding'),
  })
  .describe('A note an agent keeps across tasks (docs/notes.md): data, never an instruction.');

export const noteListSchema = z
  .looseObject({ notes: z.array(noteSchema) })
  .describe('Live notes (not expired), newest first.');

export const notesForgottenSchema = z
  .looseObject({ forgotten: z.number().int().min(0).describe('how many notes were removed') })
  .describe('The notes of an agent (of one tenant) removed.');

const once = (name: string, rule: string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === undefined ? `is required: ${rule}` : `${name} must be given once, as text`,
});

const agentSchema = (required: string) =>
  z
    .string(once('agent', required))
    .regex(AGENT_NAME, 'must be an agent name: a letter or digit, then up to 63 letters, digits, _ and -');

const tenantSchema = z
  .string(once('tenant', ''))
  .refine((tenant) => tenant === '' || TENANT_NAME.test(tenant), {
    message: `must be a tenant name (${TENANT_NAME_RULE}), or empty for the notes of tasks without one`,
  });

const LIMIT_RULE = 'must be a whole number from 1 to 1000';

/** GET /v1/notes's query: every parameter optional, unknown ones refused. */
export const noteListQuerySchema = z.strictObject({
  agent: agentSchema('').optional(),
  tenant: tenantSchema.optional(),
  limit: z
    .string(once('limit', ''))
    .regex(/^\d{1,4}$/, LIMIT_RULE)
    .transform(Number)
    .pipe(z.number().int().min(1, LIMIT_RULE).max(1000, LIMIT_RULE))
    .optional(),
});

/** DELETE /v1/notes's query: the agent whose notes go (never every note of the fleet at once), of one tenant. */
export const forgetNotesQuerySchema = z.strictObject({
  agent: agentSchema('forgetting notes takes the agent whose notes they are'),
  tenant: tenantSchema.optional(),
});

export type NoteListQuery = z.infer<typeof noteListQuerySchema>;
export type ForgetNotesQuery = z.infer<typeof forgetNotesQuerySchema>;

// The schema and the command's JSON describe the same object: a field added to one alone fails the type check.
agree<Same<keyof Known<z.infer<typeof noteSchema>>, keyof NoteView>>();
agree<Same<Known<z.infer<typeof noteSchema>>['kind'], NoteView['kind']>>();
