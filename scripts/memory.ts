// `npm run memory -- list [--agent A] [--tenant T] [--limit N] | show ID | forget ID | forget --agent A
// [--tenant T]`: the notes agents keep across tasks, from MYSQL_URL (docs/notes.md#the-store). Exit 0 when done,
// 1 when there is no such note or the store fails (one line on stderr), 2 on bad arguments.
import { env } from '../config/env.js';
import { runMemoryCommand } from '../src/notes/memory-command.js';
import { scrubText } from '../src/logging/redact.js';

async function main(): Promise<void> {
  process.exitCode = await runMemoryCommand(process.argv.slice(2), () => ({ mysqlUrl: env().MYSQL_URL }), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  });
}

main().catch((error: unknown) => {
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`memory failed: ${scrubText(line)}\n`);
  process.exitCode = 1;
});
