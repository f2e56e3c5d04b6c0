// Runs once before the tests that use the machine's services (vitest's globalSetup of the integration and browser
// projects, so also for `npx vitest run <one file>`; never for the unit project). Redis and MariaDB must answer,
// and the browser project needs Debian's chromium: installed here when running as root, otherwise the run fails
// at once with the one command that fixes it. A missing piece is a failure, never a skip.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import net from 'node:net';
import type { TestProject } from 'vitest/node';

export const CHROMIUM = '/usr/bin/chromium';
const INSTALL = ['apt-get', 'install', '-y', 'chromium'];

export interface Service {
  name: string;
  host: string;
  port: number;
  /** The command that starts it on Debian, without sudo. */
  start: string;
}

export interface Machine {
  isRoot: boolean;
  /** Whether `path` is an executable file. */
  executable: (path: string) => boolean;
  /** Runs a command to its end: ok when it exits 0; output is its stdout and stderr. */
  run: (command: string, args: string[]) => Promise<{ ok: boolean; output: string }>;
  /** Why host:port refused a TCP connection, or undefined when it accepted one. */
  unreachable: (host: string, port: number) => Promise<string | undefined>;
  log: (line: string) => void;
}

export function servicesOfTheTests(env: NodeJS.ProcessEnv = process.env): Service[] {
  const redis = new URL(env['REDIS_URL'] || 'redis://127.0.0.1:6379');
  return [
    {
      name: 'Redis',
      host: redis.hostname,
      port: Number(redis.port || 6379),
      start: 'service redis-server start',
    },
    // Most tests name this server themselves (root, empty password), whatever MYSQL_URL says.
    { name: 'MariaDB', host: '127.0.0.1', port: 3306, start: 'service mariadb start' },
  ];
}

/** Throws one line per missing piece (the command that fixes it); installs chromium itself as root. */
export async function prepareMachine(
  machine: Machine,
  { services, chromium }: { services: Service[]; chromium: boolean },
): Promise<void> {
  const sudo = machine.isRoot ? '' : 'sudo ';
  const problems: string[] = [];
  for (const service of services) {
    const why = await machine.unreachable(service.host, service.port);
    if (why !== undefined) {
      problems.push(
        `${service.name} is not reachable on ${service.host}:${service.port} (${why}): start it with \`${sudo}${service.start}\``,
      );
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  if (!chromium || machine.executable(CHROMIUM)) return;

  if (!machine.isRoot) {
    throw new Error(
      `${CHROMIUM} is missing: the run console's browser tests drive Debian's chromium; install it with \`sudo ${INSTALL.join(' ')}\``,
    );
  }
  machine.log(`test set-up: ${CHROMIUM} is missing, installing Debian's chromium (${INSTALL.join(' ')})`);
  const [command, ...args] = INSTALL as [string, ...string[]];
  let result = await machine.run(command, args);
  if (!result.ok) {
    const update = await machine.run('apt-get', ['update']);
    result = update.ok ? await machine.run(command, args) : update;
  }
  if (!result.ok || !machine.executable(CHROMIUM)) {
    const tail = result.output.trim().split('\n').slice(-5).join('\n');
    throw new Error(`\`${INSTALL.join(' ')}\` did not install ${CHROMIUM}:\n${tail}`);
  }
}

export const thisMachine: Machine = {
  isRoot: process.getuid?.() === 0,
  executable: (path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  run: (command, args) =>
    new Promise((resolve) => {
      const child = spawn(command, args, {
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', (error) => resolve({ ok: false, output: `${output}${error.message}` }));
      child.on('close', (code) => resolve({ ok: code === 0, output }));
    }),
  unreachable: (host, port) =>
    new Promise((resolve) => {
      const socket = net.connect({ host, port, timeout: 3_000 });
      socket.once('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('timeout', () => {
        socket.destroy();
        resolve('no answer in 3 s');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    }),
  log: (line) => console.log(line),
};

export default async function setup(project: TestProject): Promise<void> {
  try {
    await prepareMachine(thisMachine, {
      services: servicesOfTheTests(),
      chromium: project.name === 'browser',
    });
  } catch (error) {
    // The message is the whole story. Thrown, it would come last, under vitest's "No test files found" and a
    // stack of vitest's own frames; printed, it is the one thing the run says.
    process.stderr.write(`test set-up: ${(error as Error).message.replaceAll('\n', '\ntest set-up: ')}\n`);
    process.exit(1);
  }
}
