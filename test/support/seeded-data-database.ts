// A copy of the demo data database of a test file's own (the product's own seedDemoDatabase), with its read-only
// account: on the server of MYSQL_URL, named af_test_<tag>_<random>, and dropped with its account at the end. The
// SQL tools' integration tests meet the database through this account, as a worker does.
import { randomBytes } from 'node:crypto';
import { createPool, type Pool, type PoolOptions } from 'mysql2/promise';
import { seedDemoDatabase } from '../../src/demo/seed-demo-database.js';
import { quoteIdentifier } from '../../src/store/pool.js';

export class SeededDataDatabase {
  readonly server = new URL(process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet');
  readonly host = this.server.hostname;
  readonly port = Number(this.server.port || 3306);
  readonly database: string;
  /** The read-only account (user names stay short: MySQL allows 32 characters). */
  readonly reader: string;
  readonly readerPassword = `pw_${randomBytes(8).toString('hex')}`;

  constructor(tag: string) {
    const suffix = randomBytes(4).toString('hex');
    this.database = `af_test_${tag}_${suffix}`;
    this.reader = `af_${tag.slice(0, 2)}_${suffix}`;
  }

  /** Creates the database, its demo tables and rows, and the reader (seedDemoDatabase). */
  async seed(): Promise<void> {
    await seedDemoDatabase({
      adminUrl: this.server.href,
      database: this.database,
      readerUser: this.reader,
      readerPassword: this.readerPassword,
    });
  }

  /** The reader's URL, on `port` (a proxy's) if given. */
  readerUrl(port = this.port, host = this.host): string {
    return `mysql://${this.reader}:${this.readerPassword}@${host}:${port}/${this.database}`;
  }

  /** A pool of the server's administrator (MYSQL_URL's user), with no default database unless given. */
  rootPool(options: PoolOptions = {}): Pool {
    return createPool({
      host: this.host,
      port: this.port,
      user: decodeURIComponent(this.server.username) || 'root',
      password: decodeURIComponent(this.server.password),
      connectionLimit: 2,
      ...options,
    });
  }

  /** Drops the database and the reader. */
  async drop(root: Pool): Promise<void> {
    await root.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(this.database)}`);
    await root.query('DROP USER IF EXISTS ?@?', [this.reader, '%']);
  }
}
