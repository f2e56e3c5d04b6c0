#!/usr/bin/env node
// `agent-fleet <command>`: the package's processes and operator commands (worker, enqueue, api, board, migrate,
// scheduler, trace, report, schedules) and the scaffold (init) as compiled JavaScript, no TypeScript loader
// needed. Each runs the module its npm script runs (bin/command-table.ts).
import { BIN_USAGE, binCommand } from './commands.js';

const command = binCommand(process.argv.slice(2), process.cwd());
if (command.kind === 'help') {
  process.stdout.write(command.text);
} else if (command.kind === 'error') {
  process.stderr.write(`agent-fleet: ${command.message}\n\n${BIN_USAGE}`);
  process.exitCode = 2;
} else {
  Object.assign(process.env, command.env);
  // The module reads its own arguments from process.argv, as under its npm script.
  process.argv.splice(2, Infinity, ...command.args);
  await import(command.module);
}
