// Redis behind Sentinel, of the test's own: a master, a replica of it and three sentinels (a quorum of 2), all from
// this machine's redis-server on free ports with their own directories, torn down with them. Ready when every
// sentinel names the master, knows the replica and the two other sentinels: what a failover needs.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { freePort } from '../../src/demo/free-port.js';
import { connect as connectTo, RedisProcesses, waitFor } from './redis-processes.js';

export interface SentinelSecurity {
  /** The master and replica ask for it (`--requirepass`, `--masterauth`); the sentinels give it (`auth-pass`). */
  password?: string;
  /** The sentinels ask for it themselves (`requirepass`), and give it to one another (`sentinel-pass`). */
  sentinelPassword?: string;
}

export const SENTINEL_MASTER_NAME = 'af-test-master';

export interface LocalSentinel {
  /** `127.0.0.1:p1,…` of the sentinels: REDIS_SENTINELS. */
  sentinels: string;
  name: string;
  masterPort: number;
  replicaPort: number;
  /** A plain connection to a sentinel (with its password): SENTINEL commands. */
  sentinel(): Redis;
  /**
   * SENTINEL FAILOVER: the replica becomes the master and the master its replica. Resolves once the sentinels
   * name the new master and the old one has turned replica; gives the new master's port.
   */
  failover(): Promise<number>;
  close(): Promise<void>;
}

export async function startLocalSentinel(security: SentinelSecurity = {}): Promise<LocalSentinel> {
  const dataAccess = { password: security.password };
  const sentinelAccess = { password: security.sentinelPassword };
  const connect = (port: number, access = sentinelAccess) => connectTo(port, access);
  const dir = await mkdtemp(join(tmpdir(), 'af-sentinel-'));
  const servers = new RedisProcesses();
  const close = async () => {
    await servers.killAll();
    await rm(dir, { recursive: true, force: true });
  };
  const server = (port: number, name: string) => [
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', join(dir, name), '--save', ''],
    ...['--appendonly', 'no', '--daemonize', 'no', '--logfile', ''],
    ...(security.password !== undefined
      ? ['--requirepass', security.password, '--masterauth', security.password]
      : []),
  ];
  try {
    const masterPort = await freePort(0);
    const replicaPort = await freePort(0);
    await mkdir(join(dir, 'master'));
    await mkdir(join(dir, 'replica'));
    await servers.start(masterPort, server(masterPort, 'master'), dataAccess);
    await servers.start(
      replicaPort,
      [...server(replicaPort, 'replica'), '--replicaof', '127.0.0.1', String(masterPort)],
      dataAccess,
    );
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort(0);
      // Sentinel rewrites its configuration file as it learns the set: each has its own.
      const file = join(dir, `sentinel-${i}.conf`);
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 2000`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 10000`,
          ...(security.password !== undefined
            ? [`sentinel auth-pass ${SENTINEL_MASTER_NAME} ${security.password}`]
            : []),
          ...(security.sentinelPassword !== undefined
            ? [
                `requirepass ${security.sentinelPassword}`,
                `sentinel sentinel-pass ${security.sentinelPassword}`,
              ]
            : []),
          '',
        ].join('\n'),
      );
      await servers.start(port, [file, '--sentinel', '--daemonize', 'no', '--logfile', ''], sentinelAccess);
      sentinelPorts.push(port);
    }
    for (const port of sentinelPorts) {
      const probe = connect(port);
      try {
        await waitFor(async () => {
          const master = (await probe.call('SENTINEL', 'MASTER', SENTINEL_MASTER_NAME)) as string[];
          const field = (name: string) => master[master.indexOf(name) + 1];
          return field('num-slaves') === '1' && field('num-other-sentinels') === '2';
        }, `sentinel :${port} knows the replica and the other sentinels`);
      } finally {
        probe.disconnect();
      }
    }
    return {
      sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      name: SENTINEL_MASTER_NAME,
      masterPort,
      replicaPort,
      sentinel: () => connect(sentinelPorts[0]!),
      async failover() {
        const probe = connect(sentinelPorts[0]!);
        try {
          const masterPortNow = async () =>
            Number(
              (
                (await probe.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME)) as string[]
              )[1],
            );
          const before = await masterPortNow();
          const after = before === masterPort ? replicaPort : masterPort;
          // The replica first catches up with what the master took so far: a replica still loading its first
          // sync, promoted, loses every write since (asynchronous replication, docs/operations.md). Under Node 24
          // the batch was enqueued inside that window. This failover is of a replica in sync, as monitoring
          // would see it; the writes during the failover itself are still at stake.
          const oldMaster = connect(before, dataAccess);
          const replica = connect(after, dataAccess);
          try {
            const field = (info: string, name: string) =>
              Number(new RegExp(`${name}:(\\d+)`).exec(info)?.[1]);
            const target = field(await oldMaster.info('replication'), 'master_repl_offset');
            await waitFor(async () => {
              const info = await replica.info('replication');
              return /master_link_status:up/.test(info) && field(info, 'slave_repl_offset') >= target;
            }, 'the replica caught up with the master');
          } finally {
            oldMaster.disconnect();
            replica.disconnect();
          }
          await probe.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER_NAME);
          await waitFor(async () => (await masterPortNow()) === after, 'the sentinels name the new master');
          const old = connect(before, dataAccess);
          try {
            await waitFor(async () => (await old.role())[0] === 'slave', 'the old master turned replica');
          } finally {
            old.disconnect();
          }
          return after;
        } finally {
          probe.disconnect();
        }
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
