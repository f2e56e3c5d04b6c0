// The `agent-fleet` command line, its pure half: argv → which process module to run, with what arguments and
// environment, or the help to print. Each command runs the same module as its npm script (docs/commands.md),
// compiled in the package; the table of commands is bin/command-table.ts.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { usableCores } from '../src/util/usable-cores.js';
import { parseProcesses } from '../src/worker/worker-args.js';
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

/**
 * `worker [--config FILE | --config=FILE] [--processes N|auto]`: the configuration becomes FLEET_CONFIG, as an
 * absolute path; --processes goes on to the worker entry, which then supervises N workers.
 */
function workerRun(
  args: readonly string[],
  cwd: string,
): { env: Record<string, string>; args: string[] } | string {
  const env: Record<string, string> = {};
  const passed: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (flag === '--config') {
      if (!value) return 'worker: --config needs a file';
      const path = resolve(cwd, value);
      if (!existsSync(path)) return `worker: --config: no file at ${path}`;
      env.FLEET_CONFIG = path;
    } else if (flag === '--processes') {
      const n = parseProcesses(value, usableCores());
      if (typeof n === 'string') return `worker: ${n}`;
      passed.push('--processes', value!);
    } else {
      return `worker: unknown arguments ${args.join(' ')} (only --config FILE and --processes N|auto)`;
    }
  }
  return { env, args: passed };
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
    const worker = workerRun(args, cwd);
    return typeof worker === 'string' ? { kind: 'error', message: worker } : { ...run, ...worker };
  }
  if (args.length > 0)
    return { kind: 'error', message: `${name} takes no arguments (configure it with the environment)` };
  return run;
}
