// The `agent-fleet` command line, its pure half: argv → which process module to run, with what arguments and
// environment. Each command runs the same module as its npm script (docs/commands.md), compiled in the package.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const BIN_USAGE = `usage: agent-fleet <command> [options]

  worker [--config FILE]   one worker process (FILE: the fleet configuration, .js; default FLEET_CONFIG,
                           else ./agent-fleet.config.js when present, else the built-in demo fleet)
  enqueue --task "…" …     enqueue a task or a batch (agent-fleet enqueue --help)
  api                      the HTTP API on API_PORT
  board                    Bull Board on BOARD_PORT
  migrate                  create or upgrade the store's schema
  scheduler                register and fire the schedules without running tasks

Configuration is the environment, as for the npm scripts (REDIS_URL, MYSQL_URL, OPENAI_BASE_URL, …).
`;

/** Paths relative to this directory (bin/), as the dynamic import in agent-fleet.ts resolves them. */
const MODULES = {
  worker: '../workers/agent-worker.js',
  enqueue: '../producers/cli.js',
  api: '../producers/api.js',
  board: '../producers/board.js',
  migrate: '../scripts/migrate.js',
  scheduler: '../workers/scheduler.js',
} as const;

export type BinCommandName = keyof typeof MODULES;

export type BinCommand =
  | { kind: 'help' }
  | { kind: 'error'; message: string }
  | {
      kind: 'run';
      name: BinCommandName;
      module: string;
      /** The arguments the module reads as process.argv.slice(2). */
      args: string[];
      /** Set in the environment before the module loads. */
      env: Record<string, string>;
    };

function isCommand(name: string): name is BinCommandName {
  return Object.hasOwn(MODULES, name);
}

/** `worker [--config FILE | --config=FILE]`: the configuration becomes FLEET_CONFIG, as an absolute path. */
function workerEnv(args: readonly string[], cwd: string): Record<string, string> | string {
  if (args.length === 0) return {};
  const [flag, value, ...rest] = args;
  let file: string | undefined;
  if (flag === '--config' && rest.length === 0) file = value;
  else if (flag?.startsWith('--config=') && value === undefined) file = flag.slice('--config='.length);
  else return `worker: unknown arguments ${args.join(' ')} (only --config FILE)`;
  if (!file) return 'worker: --config needs a file';
  const path = resolve(cwd, file);
  if (!existsSync(path)) return `worker: --config: no file at ${path}`;
  return { FLEET_CONFIG: path };
}

export function binCommand(argv: readonly string[], cwd: string): BinCommand {
  const [name, ...args] = argv;
  if (name === undefined) return { kind: 'error', message: 'a command is needed' };
  if (name === '--help' || name === '-h' || name === 'help') return { kind: 'help' };
  if (!isCommand(name)) return { kind: 'error', message: `unknown command ${JSON.stringify(name)}` };
  const run = { kind: 'run' as const, name, module: MODULES[name], args: [...args], env: {} };
  if (name === 'enqueue') return run;
  if (name === 'worker') {
    const env = workerEnv(args, cwd);
    return typeof env === 'string' ? { kind: 'error', message: env } : { ...run, args: [], env };
  }
  if (args.length > 0)
    return { kind: 'error', message: `${name} takes no arguments (configure it with the environment)` };
  return run;
}
