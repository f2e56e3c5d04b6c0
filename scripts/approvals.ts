// `npm run approvals -- list | show ID | approve ID | reject ID | approve/reject --batch B --tool T`: the calls
// waiting for a person's decision, and deciding them from a shell as `shell:<user>` (docs/approvals.md). Exit 0
// when done, 1 when there is no such approval, it was decided before (the first decision is printed), the
// decision is refused or the store fails (one line on stderr), 2 on bad arguments.
import { env, redisTargetOf } from '../config/env.js';
import { runApprovalsCommand } from '../src/approvals/approvals-command.js';
import { scrubText } from '../src/logging/redact.js';

async function main(): Promise<void> {
  process.exitCode = await runApprovalsCommand(
    process.argv.slice(2),
    () => {
      const config = env();
      return { mysqlUrl: config.MYSQL_URL, redis: redisTargetOf(config), queuePrefix: config.QUEUE_PREFIX };
    },
    {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
    },
  );
}

main().catch((error: unknown) => {
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`approvals failed: ${scrubText(line)}\n`);
  process.exitCode = 1;
});
