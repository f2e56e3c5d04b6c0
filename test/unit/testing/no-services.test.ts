// The unit project's guard (test/support/no-services.ts): a unit test that reaches Redis, MariaDB or an SMTP
// server gets an error naming it, even through a client that swallows connection errors to retry.
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { takeRefusedConnections } from '../../support/no-services.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

afterEach(() => {
  takeRefusedConnections();
});

describe('the no-services guard', () => {
  it.each([
    ['Redis', 6379],
    ['MariaDB', 3306],
    ['SMTP', 1025],
    ['SMTP', 2525],
  ])('refuses a socket to %s on port %i, naming the file and the test', (service, port) => {
    expect(() => net.connect({ host: '127.0.0.1', port })).toThrow(
      new RegExp(`test/unit/testing/no-services\\.test\\.ts > the no-services guard > refuses .*${service}`),
    );
    expect(() => net.createConnection(port, '127.0.0.1')).toThrow(/unit tests run without services/);
    expect(takeRefusedConnections()).toHaveLength(2);
  });

  it('refuses a MySQL unix socket', () => {
    expect(() => net.connect({ path: '/run/mysqld/mysqld.sock' })).toThrow(/a service socket/);
    expect(takeRefusedConnections()).toHaveLength(1);
  });

  it('records the attempt of a client that retries quietly, so the test fails in afterEach', async () => {
    const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on('error', () => {});
    await expect(redis.connect()).rejects.toThrow();
    redis.disconnect();
    expect(takeRefusedConnections().join('\n')).toMatch(/Redis \(port 6379\)/);
  });

  it('lets other sockets through', async () => {
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise((resolve, reject) => socket.on('connect', resolve).on('error', reject));
    socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    expect(takeRefusedConnections()).toEqual([]);
  });
});

describe('the vitest projects', () => {
  it('run test/unit with the guard, test/integration and its browser tests after the machine set-up', async () => {
    const { default: config } = await import('../../../vitest.config.js');
    const projects = (config.test?.projects ?? []) as {
      test: { name: string; include: string[]; setupFiles?: string[]; globalSetup?: string[] };
    }[];
    expect(
      projects.map(({ test }) => [test.name, test.include, test.setupFiles ?? [], test.globalSetup ?? []]),
    ).toEqual([
      ['unit', ['test/unit/**/*.test.ts'], ['./test/support/no-services.ts'], []],
      ['integration', ['test/integration/**/*.test.ts'], [], ['./test/support/global-setup.ts']],
      [
        'browser',
        ['test/integration/console/browser.test.ts', 'test/integration/console/approvals-browser.test.ts'],
        [],
        ['./test/support/global-setup.ts'],
      ],
    ]);
  });

  it('leave no test file outside them, where npm test would not run it', () => {
    const stray = readdirSync(`${REPO_ROOT}/test`, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.test.ts'))
      .filter((file) => !/^(unit|integration)\//.test(file));
    expect(stray).toEqual([]);
  });
});
