// sqlTools(...) as a fleet configuration wires it, against the real MariaDB: a data database that is absent is
// prepared by the configuration's `whenMissing` hook (the repository's worker seeds the demo's there) and opened
// again; without a hook the open fails. The worker library seeds nothing itself (docs/architecture.md).
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { seedDemoDatabase } from '../src/demo/seed-demo-database.js';
import { quoteIdentifier } from '../src/store/pool.js';
import { sqlTools } from '../src/tools/sql-tool-source.js';
import type { WorkerServices } from '../src/worker/worker-services.js';

const ADMIN_URL = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const SERVER = new URL(ADMIN_URL);
const SUFFIX = randomBytes(4).toString('hex');
const DATABASE = `af_test_src_${SUFFIX}`;
const READER = `af_s_${SUFFIX}`;
const PASSWORD = `pw_${randomBytes(8).toString('hex')}`;
const URL_ = `mysql://${READER}:${PASSWORD}@${SERVER.hostname}:${SERVER.port || 3306}/${DATABASE}`;

const lines: string[] = [];
const logger = {
  info: (...args: unknown[]) => lines.push(String(args.at(-1))),
  warn() {},
  error() {},
  debug() {},
};
const services = { logger } as unknown as WorkerServices;

afterAll(async () => {
  const admin = await createConnection({
    host: SERVER.hostname,
    port: Number(SERVER.port || 3306),
    user: decodeURIComponent(SERVER.username) || 'root',
    password: decodeURIComponent(SERVER.password),
  });
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
  await admin.query(`DROP USER IF EXISTS '${READER}'@'%', '${READER}'@'localhost', '${READER}'@'127.0.0.1'`);
  await admin.end();
});

describe('sqlTools with an absent data database', () => {
  it('fails to open without a hook', async () => {
    await expect(sqlTools({ database: URL_ }).open(services)).rejects.toThrow();
  });

  it('runs the hook once, then opens the database it prepared', async () => {
    let calls = 0;
    const source = sqlTools({
      database: URL_,
      whenMissing: async () => {
        calls++;
        await seedDemoDatabase({
          adminUrl: ADMIN_URL,
          database: DATABASE,
          readerUser: READER,
          readerPassword: PASSWORD,
        });
      },
    });
    const opened = await source.open(services);
    try {
      expect(calls).toBe(1);
      const listTables = opened.tools.find((tool) => tool.name === 'list_tables')!;
      const output = await listTables.execute(
        {},
        {
          signal: AbortSignal.timeout(10_000),
          runId: 't',
          callKey: 't:1',
          step: 1,
          once: (effect) => effect(),
        },
      );
      expect(JSON.stringify(output)).toContain('orders');
      expect(lines.join('\n')).toMatch(/could not be opened: preparing it/);
    } finally {
      await opened.close?.();
    }
  }, 60_000);
});
