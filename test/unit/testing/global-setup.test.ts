// The machine set-up that runs before the integration and browser projects (test/support/global-setup.ts), with
// the machine injected: chromium installed as root, the one command that fixes it otherwise, services checked.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  prepareMachine,
  servicesOfTheTests,
  thisMachine,
  type Machine,
} from '../../support/global-setup.js';

const SERVICES = servicesOfTheTests({});

function fakeMachine({
  isRoot = true,
  chromium = false,
  down = [] as number[],
  failingRuns = 0,
}: { isRoot?: boolean; chromium?: boolean; down?: number[]; failingRuns?: number } = {}) {
  let installed = chromium;
  let failuresLeft = failingRuns;
  const runs: string[] = [];
  const lines: string[] = [];
  const machine: Machine = {
    isRoot,
    executable: (path) => path === CHROMIUM && installed,
    run: async (command, args) => {
      runs.push([command, ...args].join(' '));
      if (failuresLeft > 0) {
        failuresLeft--;
        return { ok: false, output: 'E: Unable to locate package chromium' };
      }
      if (args.includes('chromium')) installed = true;
      return { ok: true, output: '' };
    },
    unreachable: async (_host, port) => (down.includes(port) ? 'ECONNREFUSED' : undefined),
    log: (line) => lines.push(line),
  };
  return { machine, runs, lines };
}

describe('the machine set-up of the tests', () => {
  it('installs chromium when it is missing and the tests run as root, saying so in one line', async () => {
    const { machine, runs, lines } = fakeMachine({ isRoot: true });
    await prepareMachine(machine, { services: SERVICES, chromium: true });
    expect(runs).toEqual(['apt-get install -y chromium']);
    expect(lines).toEqual([
      `test set-up: ${CHROMIUM} is missing, installing Debian's chromium (apt-get install -y chromium)`,
    ]);
  });

  it('updates the package lists and tries again when the first install fails', async () => {
    const { machine, runs } = fakeMachine({ isRoot: true, failingRuns: 1 });
    await prepareMachine(machine, { services: SERVICES, chromium: true });
    expect(runs).toEqual(['apt-get install -y chromium', 'apt-get update', 'apt-get install -y chromium']);
  });

  it('fails with what apt said when chromium cannot be installed', async () => {
    const { machine } = fakeMachine({ isRoot: true, failingRuns: 3 });
    await expect(prepareMachine(machine, { services: SERVICES, chromium: true })).rejects.toThrow(
      /`apt-get install -y chromium` did not install \/usr\/bin\/chromium:\nE: Unable to locate package chromium/,
    );
  });

  it('fails at once, naming the one command, when chromium is missing and the tests do not run as root', async () => {
    const { machine, runs } = fakeMachine({ isRoot: false });
    const error = await prepareMachine(machine, { services: SERVICES, chromium: true }).catch(
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      "/usr/bin/chromium is missing: the run console's browser tests drive Debian's chromium; " +
        'install it with `sudo apt-get install -y chromium`',
    );
    expect(runs).toEqual([]);
  });

  it('does nothing when chromium is there, or when the project needs none', async () => {
    for (const [chromium, needed] of [
      [true, true],
      [false, false],
    ]) {
      const { machine, runs, lines } = fakeMachine({ isRoot: true, chromium });
      await prepareMachine(machine, { services: SERVICES, chromium: needed! });
      expect([runs, lines]).toEqual([[], []]);
    }
  });

  it('fails at once with one line per service that is down, naming the command that starts it', async () => {
    const asUser = fakeMachine({ isRoot: false, down: [6379, 3306] });
    await expect(prepareMachine(asUser.machine, { services: SERVICES, chromium: true })).rejects.toThrow(
      new Error(
        'Redis is not reachable on 127.0.0.1:6379 (ECONNREFUSED): start it with `sudo service redis-server start`\n' +
          'MariaDB is not reachable on 127.0.0.1:3306 (ECONNREFUSED): start it with `sudo service mariadb start`',
      ),
    );
    expect(asUser.runs).toEqual([]);
    const asRoot = fakeMachine({ isRoot: true, down: [3306] });
    await expect(prepareMachine(asRoot.machine, { services: SERVICES, chromium: false })).rejects.toThrow(
      new Error(
        'MariaDB is not reachable on 127.0.0.1:3306 (ECONNREFUSED): start it with `service mariadb start`',
      ),
    );
  });

  it('checks the Redis that REDIS_URL names, as the tests use it', () => {
    expect(servicesOfTheTests({ REDIS_URL: 'redis://10.0.0.5:6380/2' })[0]).toMatchObject({
      host: '10.0.0.5',
      port: 6380,
    });
  });
});

describe('the real machine of the set-up', () => {
  it('tells a port that accepts from one that refuses', async () => {
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    expect(await thisMachine.unreachable('127.0.0.1', port)).toBeUndefined();
    await new Promise((resolve) => server.close(resolve));
    expect(await thisMachine.unreachable('127.0.0.1', port)).toBe('ECONNREFUSED');
  });

  it('runs a command to its end, and reports one that fails or does not exist', async () => {
    expect(await thisMachine.run(process.execPath, ['-e', 'console.log("hi")'])).toEqual({
      ok: true,
      output: 'hi\n',
    });
    expect((await thisMachine.run(process.execPath, ['-e', 'process.exit(3)'])).ok).toBe(false);
    expect(await thisMachine.run('no-such-command-af', [])).toMatchObject({ ok: false, output: /ENOENT/ });
  });
});
