// `npm run memory`: list, show and forget the notes agents keep across tasks (docs/notes.md#the-store), from the
// store at MYSQL_URL. `list` prints one JSON object a line (JSON Lines), `show` one note as indented JSON; text is
// data a tool or a model wrote, so terminal controls in it are written as \u escapes. Exit 0 done; 1 no such note
// or the store failing; 2 bad arguments.
import { parseMysqlUrl } from '../store/mysql-url.js';
import { createStorePool } from '../store/pool.js';
import { terminalSafe, terminalSafeJson } from '../reports/text.js';
import { MEMORY_USAGE, parseMemoryArgs } from './memory-args.js';
import { MysqlNoteStore } from './notes-store.js';
import { noteView } from './note-view.js';

export interface MemoryConfig {
  mysqlUrl: string;
}

export interface MemoryIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export async function runMemoryCommand(
  argv: readonly string[],
  config: () => MemoryConfig,
  io: MemoryIo,
): Promise<number> {
  const args = parseMemoryArgs(argv);
  if (args.kind === 'help') {
    io.stdout(`${MEMORY_USAGE}\n`);
    return 0;
  }
  if (args.kind === 'error') {
    io.stderr(`memory: ${terminalSafe(args.message)}\n${MEMORY_USAGE}\n`);
    return 2;
  }
  const settings = config();
  const pool = await createStorePool(settings.mysqlUrl, { connectionLimit: 2 });
  try {
    const store = new MysqlNoteStore(pool);
    switch (args.kind) {
      case 'list': {
        const notes = await store.list(args.filter);
        io.stdout(notes.map((note) => `${terminalSafeJson(noteView(note), 0)}\n`).join(''));
        return 0;
      }
      case 'show': {
        const note = await store.get(args.id);
        if (!note) return notFound(io, args.id);
        io.stdout(`${terminalSafeJson(noteView(note))}\n`);
        return 0;
      }
      case 'forget': {
        if (!(await store.forget(args.id))) return notFound(io, args.id);
        io.stdout(`forgot note ${args.id}\n`);
        return 0;
      }
      case 'forget-all': {
        const count = await store.forgetAll(args);
        const tenant =
          args.tenant === undefined
            ? ''
            : args.tenant === ''
              ? ' without a tenant'
              : ` of tenant ${args.tenant}`;
        io.stdout(`forgot ${count} note(s) of agent ${args.agent}${tenant}\n`);
        return 0;
      }
    }
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ER_NO_SUCH_TABLE') throw error;
    const { database, redacted } = parseMysqlUrl(settings.mysqlUrl);
    io.stderr(
      `memory: ${database} has no agent_notes table (MYSQL_URL=${redacted}): is it the fleet's store? (npm run migrate creates it)\n`,
    );
    return 1;
  } finally {
    await pool.end().catch(() => undefined);
  }
}

function notFound(io: MemoryIo, id: string): number {
  io.stderr(`memory: no note ${JSON.stringify(terminalSafe(id))}\n`);
  return 1;
}
