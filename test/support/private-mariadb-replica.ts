// A MariaDB primary and its replica of the test's own, in a temporary directory, on free ports: the primary
// writes a binary log, the replica follows it over GTID and is read-only. Started from the mariadbd and
// mariadb-install-db on PATH (the same packages as the shared server); a missing binary fails the test.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { freePort } from '../../src/demo/free-port.js';

const run = promisify(execFile);

export interface PrivateReplicaPair {
  primaryPort: number;
  replicaPort: number;
  /** A root connection to the primary or the replica (no database). */
  admin(which: 'primary' | 'replica'): Promise<mysql.Connection>;
  /** Resolves once the replica has applied everything the primary has written so far. */
  caughtUp(timeoutS?: number): Promise<void>;
  /** Stops replaying the primary's writes (the replica falls behind), and starts again. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplicaPair(): Promise<PrivateReplicaPair> {
  const dir = await mkdtemp(join(tmpdir(), 'af-mariadb-'));
  const children: ChildProcess[] = [];
  const start = async (name: 'primary' | 'replica', serverId: number): Promise<number> => {
    const data = join(dir, name);
    await run('mariadb-install-db', [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=root',
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ]);
    const port = await freePort(0);
    const args = [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=root',
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${join(dir, `${name}.sock`)}`,
      `--pid-file=${join(dir, `${name}.pid`)}`,
      `--server-id=${serverId}`,
      '--innodb-buffer-pool-size=32M',
      `--log-error=${join(dir, `${name}.err`)}`,
      ...(name === 'primary' ? [`--log-bin=${join(data, 'bin')}`, '--binlog-format=ROW'] : ['--read-only=1']),
    ];
    const child = spawn('mariadbd', args, { stdio: 'ignore' });
    children.push(child);
    const failed = new Promise<never>((_, reject) =>
      child.once('error', (error) => reject(new Error(`mariadbd could not start: ${error.message}`))),
    );
    await Promise.race([waitForServer(port), failed]);
    return port;
  };
  const connect = (port: number) => mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
  try {
    const primaryPort = await start('primary', 1);
    const replicaPort = await start('replica', 2);
    const replica = await connect(replicaPort);
    try {
      await replica.query(
        `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ?, MASTER_USER = 'root', MASTER_USE_GTID = slave_pos`,
        [primaryPort],
      );
      await replica.query('START SLAVE');
    } finally {
      await replica.end();
    }
    return {
      primaryPort,
      replicaPort,
      admin: (which) => connect(which === 'primary' ? primaryPort : replicaPort),
      async caughtUp(timeoutS = 20) {
        const primary = await connect(primaryPort);
        const replicaConnection = await connect(replicaPort);
        try {
          const [[position]] = await primary.query<mysql.RowDataPacket[]>('SELECT @@gtid_binlog_pos AS pos');
          const [[waited]] = await replicaConnection.query<mysql.RowDataPacket[]>(
            'SELECT MASTER_GTID_WAIT(?, ?) AS r',
            [String(position?.['pos']), timeoutS],
          );
          if (Number(waited?.['r']) !== 0) throw new Error(`the replica did not catch up in ${timeoutS} s`);
        } finally {
          await primary.end();
          await replicaConnection.end();
        }
      },
      async pause() {
        const connection = await connect(replicaPort);
        await connection.query('STOP SLAVE SQL_THREAD').finally(() => connection.end());
      },
      async resume() {
        const connection = await connect(replicaPort);
        await connection.query('START SLAVE SQL_THREAD').finally(() => connection.end());
      },
      close: () => stop(children, dir),
    };
  } catch (error) {
    await stop(children, dir);
    throw error;
  }
}

async function stop(children: ChildProcess[], dir: string): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }),
  );
  await rm(dir, { recursive: true, force: true });
}

async function waitForServer(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
      await connection.end();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`mariadbd on port ${port} did not answer: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
