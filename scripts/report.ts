// `npm run report -- --batch ID [--out DIR]`: the batch report. Prints it, writes
// DIR/<batchId>.md, .html and .svg (DIR defaults to reports/), records it in batch_reports. Exit 0 when done,
// 1 when the batch does not exist or the store or the files fail (one line on stderr), 2 on bad arguments.
import { env } from '../config/env.js';
import { scrubText } from '../src/logging/redact.js';
import { runReportCommand } from '../src/reports/report-command.js';

async function main(): Promise<void> {
  process.exitCode = await runReportCommand(process.argv.slice(2), () => env(), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  });
}

main().catch((error: unknown) => {
  // Read directly: the failure may be a bad environment, in which case env() never parsed LOG_LEVEL.
  const debug = ['debug', 'trace'].includes(process.env['LOG_LEVEL'] ?? '');
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(
    `report failed: ${scrubText((debug && error instanceof Error ? error.stack : line) ?? line)}\n`,
  );
  process.exitCode = 1;
});
