// The command line of `npm run memory`, parsed: pure, so every refusal (which names its argument) is tested
// without a process.
import { parseSubcommand } from '../util/subcommand-args.js';
import { AGENT_NAME } from '../kernel/define-agent.js';
import { TENANT_NAME, TENANT_NAME_RULE } from '../queue/tenant-name.js';
import type { NoteListFilter } from './note.js';
import { NOTE_ID } from './note-view.js';

export const MEMORY_USAGE = `usage: npm run memory -- <command>
  list [--agent A] [--tenant T] [--limit N]   live notes, newest first: one JSON object a line
  show ID                                     one note, as JSON
  forget ID                                   remove one note
  forget --agent A [--tenant T]               remove every note of an agent (of one tenant)
--tenant '' names the notes of tasks without a tenant.`;

export type MemoryArgs =
  | { kind: 'help' }
  | { kind: 'error'; message: string }
  | { kind: 'list'; filter: NoteListFilter }
  | { kind: 'show'; id: string }
  | { kind: 'forget'; id: string }
  | { kind: 'forget-all'; agent: string; tenant?: string };

type Values = {
  agent?: string | undefined;
  tenant?: string | undefined;
  limit?: string | undefined;
  help?: boolean | undefined;
};

const OPTIONS = {
  agent: { type: 'string' },
  tenant: { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The flags each command takes; any other is refused by name. */
const ALLOWED: Record<string, readonly (keyof Values)[]> = {
  list: ['agent', 'tenant', 'limit'],
  show: [],
  forget: ['agent', 'tenant'],
};

export function parseMemoryArgs(argv: readonly string[]): MemoryArgs {
  const parsed = parseSubcommand<Values>(argv, OPTIONS, ALLOWED, 'a command is needed: list, show or forget');
  if (parsed.kind !== 'command') return parsed;
  const { command, rest, values } = parsed;
  const scope = parseScope(values);
  if (typeof scope === 'string') return { kind: 'error', message: scope };
  if (command === 'list') {
    if (rest.length > 0)
      return {
        kind: 'error',
        message: `list takes no argument ${JSON.stringify(rest[0])} (flags: --agent, --tenant, --limit)`,
      };
    const filter: NoteListFilter = { ...scope };
    if (values.limit !== undefined) {
      const limit = /^\d{1,4}$/.test(values.limit) ? Number(values.limit) : NaN;
      if (!(limit >= 1 && limit <= 1000))
        return { kind: 'error', message: '--limit must be a whole number from 1 to 1000' };
      filter.limit = limit;
    }
    return { kind: 'list', filter };
  }
  if (command === 'show') {
    if (rest.length !== 1) return { kind: 'error', message: 'show takes one note id' };
    return noteId(rest[0]!) ?? { kind: 'show', id: rest[0]! };
  }
  if (scope.agent !== undefined || scope.tenant !== undefined) {
    if (rest.length > 0)
      return { kind: 'error', message: 'forget takes a note id or --agent A [--tenant T], not both' };
    if (scope.agent === undefined)
      return { kind: 'error', message: '--tenant needs --agent: forget removes the notes of one agent' };
    return {
      kind: 'forget-all',
      agent: scope.agent,
      ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
    };
  }
  if (rest.length !== 1)
    return { kind: 'error', message: 'forget takes one note id (or --agent A [--tenant T])' };
  return noteId(rest[0]!) ?? { kind: 'forget', id: rest[0]! };
}

function parseScope(values: Values): { agent?: string; tenant?: string } | string {
  const scope: { agent?: string; tenant?: string } = {};
  if (values.agent !== undefined) {
    if (!AGENT_NAME.test(values.agent))
      return '--agent must be an agent name: a letter or digit, then up to 63 letters, digits, _ and -';
    scope.agent = values.agent;
  }
  if (values.tenant !== undefined) {
    if (values.tenant !== '' && !TENANT_NAME.test(values.tenant))
      return `--tenant must be a tenant name (${TENANT_NAME_RULE}) or '' for none`;
    scope.tenant = values.tenant;
  }
  return scope;
}

function noteId(id: string): MemoryArgs | undefined {
  return NOTE_ID.test(id) ? undefined : { kind: 'error', message: `${JSON.stringify(id)} is not a note id` };
}
