// The project as another service gets it: built, packed with `npm pack`, installed from the tarballs into empty
// folders outside the repository (the npm cache first: --prefer-offline), and processes run from there.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPOSITORY = join(import.meta.dirname, '..', '..');

/**
 * The environment of a process of the installed package: npm's own variables (a parent `npm test` sets dozens,
 * workspaces among them) and any TypeScript loader are left out, so nothing but the package is run.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'NODE_OPTIONS' && key !== 'INIT_CWD') env[key] = value;
  }
  return { ...env, ...extra };
}

export async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: cleanEnv(), maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

export interface Tarballs {
  /** The whole project: agent-fleet. */
  project: string;
  /** The client alone: @agent-fleet/client. */
  client: string;
}

/** `npm run build`, then `npm pack` of the project and of its client package, into a fresh temporary folder. */
export async function buildAndPack(): Promise<{ folder: string; tarballs: Tarballs }> {
  await run(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: REPOSITORY });
  const folder = mkdtempSync(join(tmpdir(), 'af-package-'));
  const packed = JSON.parse(
    await npm(
      [
        'pack',
        '--ignore-scripts',
        '--workspaces',
        '--include-workspace-root',
        '--pack-destination',
        folder,
        '--json',
      ],
      REPOSITORY,
    ),
  ) as { name: string; filename: string }[];
  const file = (name: string) => {
    const entry = packed.find((p) => p.name === name);
    if (!entry) throw new Error(`npm pack made no ${name}: ${JSON.stringify(packed)}`);
    return join(folder, entry.filename);
  };
  return { folder, tarballs: { project: file('agent-fleet'), client: file('@agent-fleet/client') } };
}

/** An empty ESM project at `folder` with the tarballs installed. */
export async function installInto(folder: string, tarballs: string[]): Promise<void> {
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'a-service', private: true, type: 'module' }),
  );
  await npm(
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs],
    folder,
  );
}

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGTERM, then SIGKILL if it has not exited within a few seconds. */
  stop(): Promise<void>;
}

export function start(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): RunningProcess {
  const child = spawn(command, args, { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const listeners = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return {
    child,
    output: () => output,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (!match) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`${command} ${args.join(' ')} did not print ${pattern} in ${timeoutMs} ms:\n${output}`),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Runs a command to its end: its exit code and output. */
export function runToEnd(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: cleanEnv(env), timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
