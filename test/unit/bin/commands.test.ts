// The agent-fleet command line's routing (bin/commands.ts): which module each command runs, with what
// arguments and environment, and the refusals that name what is wrong. Pure: no process is started.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../bin/command-table.js';
import { BIN_USAGE, binCommand } from '../../../bin/commands.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

const cwd = mkdtempSync(join(tmpdir(), 'af-bin-'));
writeFileSync(join(cwd, 'agent-fleet.config.js'), 'export default {};\n');
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('agent-fleet <command>', () => {
  it('worker --config FILE (or --config=FILE) serves that file, as an absolute FLEET_CONFIG', () => {
    const expected = { FLEET_CONFIG: join(cwd, 'agent-fleet.config.js') };
    for (const args of [['--config', './agent-fleet.config.js'], ['--config=agent-fleet.config.js']]) {
      expect(binCommand(['worker', ...args], cwd)).toEqual({
        kind: 'run',
        name: 'worker',
        module: '../workers/agent-worker.js',
        args: [],
        env: expected,
      });
    }
    expect(binCommand(['worker'], cwd)).toMatchObject({ kind: 'run', env: {} });
  });

  it('worker --processes N|auto goes on to the worker entry, with --config beside it; a bad count is refused', () => {
    expect(binCommand(['worker', '--processes', '4', '--config', 'agent-fleet.config.js'], cwd)).toEqual({
      kind: 'run',
      name: 'worker',
      module: '../workers/agent-worker.js',
      args: ['--processes', '4'],
      env: { FLEET_CONFIG: join(cwd, 'agent-fleet.config.js') },
    });
    expect(binCommand(['worker', '--processes=auto'], cwd)).toMatchObject({ args: ['--processes', 'auto'] });
    for (const bad of ['0', '65', 'two', ''])
      expect(binCommand(['worker', '--processes', bad], cwd)).toMatchObject({
        kind: 'error',
        message: expect.stringMatching(/^worker: --processes takes 1-64 or auto/),
      });
  });

  it('enqueue hands every argument on to the producer CLI', () => {
    expect(binCommand(['enqueue', '--task', 'hi', '--wait'], cwd)).toMatchObject({
      kind: 'run',
      module: '../producers/cli.js',
      args: ['--task', 'hi', '--wait'],
    });
  });

  it.each([
    ['api', '../producers/api.js'],
    ['board', '../producers/board.js'],
    ['migrate', '../scripts/migrate.js'],
    ['scheduler', '../workers/scheduler.js'],
  ])('%s runs %s and takes no arguments', (name, module) => {
    expect(binCommand([name], cwd)).toEqual({ kind: 'run', name, module, args: [], env: {} });
    expect(binCommand([name, '--port', '1'], cwd)).toEqual({
      kind: 'error',
      message: `${name} takes no arguments (configure it with the environment)`,
    });
  });

  it('refuses what it cannot run, naming it', () => {
    expect(binCommand([], cwd)).toEqual({ kind: 'error', message: 'a command is needed' });
    expect(binCommand(['wroker'], cwd)).toEqual({ kind: 'error', message: 'unknown command "wroker"' });
    expect(binCommand(['worker', '--config', 'missing.js'], cwd)).toEqual({
      kind: 'error',
      message: `worker: --config: no file at ${join(cwd, 'missing.js')}`,
    });
    expect(binCommand(['worker', '--config'], cwd)).toEqual({
      kind: 'error',
      message: 'worker: --config needs a file',
    });
    expect(binCommand(['worker', '--concurrency', '3'], cwd)).toMatchObject({
      kind: 'error',
      message: expect.stringMatching(/^worker: unknown arguments --concurrency 3/),
    });
    expect(binCommand(['--help'], cwd)).toEqual({ kind: 'help', text: BIN_USAGE });
  });

  it.each([
    ['trace', '../scripts/trace.js', ['--job', '42', '--json']],
    ['report', '../scripts/report.js', ['--batch', 'b1', '--out', 'out']],
    ['schedules', '../scripts/schedules.js', ['remove', 'nightly']],
    ['memory', '../scripts/memory.js', ['forget', '--agent', 'default', '--tenant', 'acme']],
    ['init', './init.js', ['my-fleet']],
  ])('%s runs %s with its arguments, as its npm script does', (name, module, args) => {
    expect(binCommand([name, ...args], cwd)).toEqual({ kind: 'run', name, module, args, env: {} });
  });

  it('answers `<command> --help` itself, loading nothing, but for enqueue whose CLI answers it', () => {
    for (const name of Object.keys(COMMANDS)) {
      const command = binCommand([name, '--help'], cwd);
      if (name === 'enqueue') {
        expect(command).toMatchObject({ kind: 'run', args: ['--help'] });
        continue;
      }
      expect(command, name).toMatchObject({
        kind: 'help',
        text: expect.stringMatching(`^usage: agent-fleet ${name}`),
      });
      expect(binCommand([name, '-h'], cwd)).toEqual(command);
      expect(BIN_USAGE).toContain(`  ${name}`);
    }
  });

  it('every module it names exists as a source next to the bin, and is compiled by the build', async () => {
    const { existsSync, readFileSync } = await import('node:fs');
    const build = JSON.parse(readFileSync(join(REPO_ROOT, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
    };
    for (const name of Object.keys(COMMANDS)) {
      const command = binCommand([name], cwd);
      if (command.kind !== 'run') throw new Error(name);
      const source = join(REPO_ROOT, 'bin', command.module).replace(/\.js$/, '.ts');
      expect(existsSync(source), source).toBe(true);
      const path = source.slice(REPO_ROOT.length + 1);
      expect(
        build.include.some((entry) => path === entry || path.startsWith(`${entry}/`)),
        `${path} in tsconfig.build.json`,
      ).toBe(true);
    }
  });
});
