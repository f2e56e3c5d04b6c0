// CI runs the tests with the README's own command and sets up nothing else for them (the services aside), so a
// green CI means the README's command is green on a machine with Redis and MariaDB.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/repo-paths.js';

const TEST_COMMAND = /^(npm (test|run test\S*)|npx vitest|vitest)\b/;

/** The shell commands of some lines: comments dropped, `&&`, `||` and `;` lists split. */
function commandsOf(lines: string[]): string[] {
  return lines
    .map((line) => line.replace(/(^|\s)#.*$/, ''))
    .flatMap((line) => line.split(/&&|\|\||;/))
    .map((command) => command.trim())
    .filter(Boolean);
}

function readmeCommands(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((part) => part.startsWith('The two commands'));
  const block = section?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (block === undefined) throw new Error('README.md: no sh block under "## The two commands"');
  return commandsOf(block.split('\n'));
}

const ciScript = readFileSync(join(REPO_ROOT, '.ci', 'run'), 'utf8');

describe('.ci/run', () => {
  it("runs the tests with exactly the README's test command, on Node 20 and on Node 24", () => {
    const readmeTests = readmeCommands().filter((command) => TEST_COMMAND.test(command));
    expect(readmeTests).toEqual(['npm test']);
    // A leading assignment (PATH=… for Node 24) is where it runs, not what.
    const ciTests = commandsOf(ciScript.split('\n'))
      .map((command) => command.replace(/^(\w+=\S+\s+)+/, ''))
      .filter((command) => TEST_COMMAND.test(command));
    expect(ciTests).toEqual([...readmeTests, ...readmeTests]);
    expect(ciScript).toMatch(/PATH="\$node24_dir\/node_modules\/node\/bin:\$PATH" npm test/);
  });

  it('installs nothing for the tests that the test command does not install itself', () => {
    expect(commandsOf(ciScript.split('\n')).filter((command) => /\bapt(-get)?\b/.test(command))).toEqual([]);
  });
});
