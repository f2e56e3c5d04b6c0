// The command lines of the fleet's `<tool> <command> [flags]` CLIs (approvals, memory), parsed up to the command:
// node's parseArgs, strict, then the command looked up and each flag it does not take refused by name. Each CLI
// validates its own values after.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type Subcommand<Values> =
  | { kind: 'help' }
  | { kind: 'error'; message: string }
  | { kind: 'command'; command: string; rest: string[]; values: Values };

/**
 * `commands` lists, per command, the flags it takes (`help` is always taken); `needed` is the error when no command
 * is given.
 */
export function parseSubcommand<Values extends { help?: boolean | undefined }>(
  argv: readonly string[],
  options: NonNullable<ParseArgsConfig['options']>,
  commands: Readonly<Record<string, readonly (keyof Values)[]>>,
  needed: string,
): Subcommand<Values> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: true,
    }) as {
      values: Values;
      positionals: string[];
    });
  } catch (error) {
    return { kind: 'error', message: error instanceof Error ? error.message : String(error) };
  }
  if (values.help) return { kind: 'help' };
  const [command, ...rest] = positionals;
  if (command === undefined) return { kind: 'error', message: needed };
  const allowed = Object.hasOwn(commands, command) ? commands[command] : undefined;
  if (!allowed) return { kind: 'error', message: `unknown command ${JSON.stringify(command)}` };
  const stray = (Object.keys(values) as (keyof Values & string)[]).find(
    (flag) => flag !== 'help' && !allowed.includes(flag),
  );
  if (stray) return { kind: 'error', message: `--${stray} is not an option of ${command}` };
  return { kind: 'command', command, rest, values };
}
