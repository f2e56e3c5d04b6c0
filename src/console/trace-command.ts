// `npm run trace -- --job ID [--json]`: a run's timeline in the terminal, the same model the run console's page
// shows (src/console/timeline.ts), with the runs its agent called nested under the calls that started them
// (trace-tree.ts), read from the store at MYSQL_URL (MYSQL_READ_URL when set). It only reads: no migration, no write.
import { parseArgs } from 'node:util';
import { parseMysqlUrl } from '../store/mysql-url.js';
import { createReadPool, readStoreOf, type ReadStoreConfig } from '../store/read-pool.js';
import { terminalSafe } from '../reports/text.js';
import { ConsoleStore } from './console-store.js';
import { renderTraceTree } from './render-trace-tree.js';
import { loadTraceTree } from './trace-tree.js';

export const TRACE_USAGE = 'usage: npm run trace -- --job ID [--json]';
/** agent_runs.job_id is VARCHAR(64). */
const JOB_ID = /^[\x20-\x7e]{1,64}$/;

export type TraceArgs =
  { kind: 'run'; jobId: string; json: boolean } | { kind: 'help' } | { kind: 'error'; message: string };

export function parseTraceArgs(argv: readonly string[]): TraceArgs {
  let values: { job?: string | undefined; json?: boolean | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { job: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { kind: 'error', message: error instanceof Error ? error.message : String(error) };
  }
  if (values.help) return { kind: 'help' };
  const jobId = values.job;
  if (jobId === undefined || jobId === '') return { kind: 'error', message: '--job ID is required' };
  if (!JOB_ID.test(jobId))
    return { kind: 'error', message: '--job must be 1-64 printable ASCII characters, as job ids are' };
  return { kind: 'run', jobId, json: values.json ?? false };
}

export interface TraceCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Resolves to the exit code: 0 printed, 1 no such run, 2 bad arguments. Only the store failing throws. */
export async function runTraceCommand(
  argv: readonly string[],
  /** MYSQL_URL, or the environment: MYSQL_READ_URL is read when set. */
  mysqlUrl: () => string | ReadStoreConfig,
  io: TraceCommandIo,
): Promise<number> {
  const args = parseTraceArgs(argv);
  if (args.kind === 'help') {
    io.stdout(`${TRACE_USAGE}\n`);
    return 0;
  }
  if (args.kind === 'error') {
    io.stderr(`trace: ${args.message} (${TRACE_USAGE})\n`);
    return 2;
  }
  const config = mysqlUrl();
  const { url, variable } = readStoreOf(config);
  const pool = await createReadPool(config, { connectionLimit: 1 });
  try {
    const store = new ConsoleStore(pool);
    const loaded = await loadTraceTree((id) => store.loadRun(id), args.jobId).catch((error: unknown) => {
      // A database no worker has migrated: say where we looked instead of the driver's words.
      if ((error as { code?: unknown }).code !== 'ER_NO_SUCH_TABLE') throw error;
      return 'no_tables' as const;
    });
    if (loaded === 'no_tables') {
      const { database, redacted } = parseMysqlUrl(url);
      io.stderr(
        `trace: ${database} has no agent_runs table (${variable}=${redacted}): is it the fleet's store? (npm run migrate creates it)\n`,
      );
      return 1;
    }
    if (loaded === null) {
      const { database, redacted } = parseMysqlUrl(url);
      io.stderr(
        `trace: no run ${JSON.stringify(terminalSafe(args.jobId))} in agent_runs of ${database} (${variable}=${redacted})\n`,
      );
      return 1;
    }
    // The JSON is the run's own timeline, as the console's; the text nests the runs it called.
    io.stdout(args.json ? `${JSON.stringify(loaded.timeline, null, 2)}\n` : renderTraceTree(loaded));
    return 0;
  } finally {
    await pool.end().catch(() => undefined);
  }
}
