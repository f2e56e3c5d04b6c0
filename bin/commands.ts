// The `agent-fleet` command line, its pure half: argv → which process module to run, with what arguments and
// environment, or the help to print. Each command runs the same module as its npm script (docs/commands.md),
// compiled in the package; the table of commands is bin/command-table.ts.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { COMMANDS, isCommand, type BinCommandName } from './command-table.js';

export type { BinCommandName };

export const BIN_USAGE = `usage: agent-fleet <command> [options]      agent-fleet <command> --help

${Object.values(COMMANDS)
  .map((row) => `  ${row.synopsis}`)
  .join('\n')}

Configuration is the environment, as for the npm scripts (REDIS_URL, MYSQL_URL, OPENAI_BASE_URL, …).
`;

export type BinCommand =
  | { kind: 'help'; text: string }
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

const asksForHelp = (args: readonly string[]) => args.includes('--help') || args.includes('-h');

export function binCommand(argv: readonly string[], cwd: string): BinCommand {
  const [name, ...args] = argv;
  if (name === undefined) return { kind: 'error', message: 'a command is needed' };
  if (name === '--help' || name === '-h' || name === 'help') return { kind: 'help', text: BIN_USAGE };
  if (!isCommand(name)) return { kind: 'error', message: `unknown command ${JSON.stringify(name)}` };
  const row: { module: string; arguments: string; help?: string } = COMMANDS[name];
  // Answered here, before any module loads: help needs no environment, Redis or MySQL.
  if (row.help !== undefined && asksForHelp(args)) return { kind: 'help', text: row.help };
  const run = { kind: 'run' as const, name, module: row.module, args: [...args], env: {} };
  if (row.arguments === 'pass') return run;
  if (row.arguments === 'config') {
    const env = workerEnv(args, cwd);
    return typeof env === 'string' ? { kind: 'error', message: env } : { ...run, args: [], env };
  }
  if (args.length > 0)
    return { kind: 'error', message: `${name} takes no arguments (configure it with the environment)` };
  return run;
}
