// `agent-fleet init [DIR]`: scaffolds a fleet into DIR (src/scaffold/write-scaffold.ts) and says what it wrote and
// what to run next. Exit 0 when written, 1 when a file is in the way (named; nothing written), 2 on bad arguments.
import { resolve } from 'node:path';
import { ScaffoldRefused, writeScaffold } from '../src/scaffold/write-scaffold.js';

const args = process.argv.slice(2);
const options = args.filter((arg) => arg.startsWith('-'));
if (options.length > 0 || args.length > 1) {
  process.stderr.write(
    `agent-fleet init: ${options.length > 0 ? `unknown option ${options[0]}` : 'one folder at most'} (usage: agent-fleet init [DIR])\n`,
  );
  process.exitCode = 2;
} else {
  const dir = resolve(args[0] ?? '.');
  try {
    const { written, notes } = writeScaffold(dir);
    process.stdout.write(
      `wrote ${written.join(', ')} in ${dir}\n` +
        notes.map((note) => `note: ${note}\n`).join('') +
        '\nnext:\n' +
        '  npm install /path/to/agent-fleet-0.1.0.tgz   # the package, if this folder has not got it yet\n' +
        '  node --test                                # the agent against the scripted model (Redis, MySQL)\n' +
        '  npx agent-fleet worker --config ./agent-fleet.config.js   # with the environment of .env.example\n',
    );
  } catch (error) {
    if (!(error instanceof ScaffoldRefused)) throw error;
    process.stderr.write(`agent-fleet init: ${error.message}\n`);
    process.exitCode = 1;
  }
}
