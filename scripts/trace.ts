// `npm run trace -- --job ID [--json]`: a run's timeline (model calls, tool calls with their arguments and
// observations, folds, budget decisions, the answer) in the terminal, read from MYSQL_URL. Exit 0 when printed,
// 1 when there is no such run or the store fails (one line on stderr), 2 on bad arguments.
import { env } from '../config/env.js';
import { runTraceCommand } from '../src/console/trace-command.js';
import { scrubText } from '../src/logging/redact.js';

async function main(): Promise<void> {
  process.exitCode = await runTraceCommand(process.argv.slice(2), () => env(), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  });
}

main().catch((error: unknown) => {
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`trace failed: ${scrubText(line)}\n`);
  process.exitCode = 1;
});
