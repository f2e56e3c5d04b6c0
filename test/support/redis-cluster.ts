// A Redis Cluster of the test's own: three masters from this machine's redis-server (`--cluster-enabled yes`),
// each on a free port with its own directory, joined by `redis-cli --cluster create`, torn down with their
// directories. Missing redis-server or redis-cli fails the test: a cluster test is never skipped.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { freePort } from '../../src/demo/free-port.js';
import { connect as connectTo, RedisProcesses, waitFor } from './redis-processes.js';
import type { TestTls } from './test-tls.js';

export interface ClusterSecurity {
  /** Every node asks for it (`--requirepass`) and gives it to its master (`--masterauth`). */
  password?: string;
  /** TLS only, clients and the cluster bus alike, with these certificates (test/support/test-tls.ts). */
  tls?: TestTls;
}

export interface LocalCluster {
  /** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: REDIS_CLUSTER_NODES. */
  nodes: string;
  ports: number[];
  /** A plain connection to the first master (with the password and TLS): CLUSTER KEYSLOT and the like. */
  probe(): Redis;
  /**
   * CLUSTER FAILOVER on a replica of the master that holds `key`'s slot (needs replicas): the replica and its
   * master swap roles, the writes the master took handed over first. Resolves once the replica is master and
   * the cluster is whole again; gives the ports before and after.
   */
  failoverSlotOf(key: string): Promise<{ from: number; to: number }>;
  close(): Promise<void>;
}

/** A port whose cluster bus port (port + 10000) is free as well. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freePort(0);
    if (port + 10_000 > 65_535 || taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await freePort(port + 10_000)) !== port + 10_000) continue;
    taken.add(port).add(port + 10_000);
    return port;
  }
  throw new Error('no free port pair (port, port + 10000) for a cluster node');
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => reject(new Error(`${command} could not start: ${error.message}`)));
    child.once('exit', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output}`)),
    );
  });
}

export async function startLocalCluster(
  masters = 3,
  replicasPerMaster = 0,
  security: ClusterSecurity = {},
): Promise<LocalCluster> {
  const access = { password: security.password, tlsCa: security.tls?.ca };
  const connect = (port: number) => connectTo(port, access);
  // redis-cli's own: `-a` (its warning about the command line goes to stderr), and TLS with the CA.
  const cliAccess = [
    ...(security.password !== undefined ? ['-a', security.password, '--no-auth-warning'] : []),
    ...(security.tls ? ['--tls', '--cacert', security.tls.caFile] : []),
  ];
  const serverAccess = [
    ...(security.password !== undefined
      ? ['--requirepass', security.password, '--masterauth', security.password]
      : []),
    ...(security.tls
      ? [
          ...['--tls-cert-file', security.tls.certFile, '--tls-key-file', security.tls.keyFile],
          ...['--tls-ca-cert-file', security.tls.caFile, '--tls-auth-clients', 'no'],
          ...['--tls-cluster', 'yes', '--tls-replication', 'yes'],
        ]
      : []),
  ];
  const size = masters * (1 + replicasPerMaster);
  const taken = new Set<number>();
  const ports: number[] = [];
  const dirs: string[] = [];
  const servers = new RedisProcesses();
  const close = async () => {
    await servers.killAll();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  };
  try {
    for (let i = 0; i < size; i++) {
      const port = await clusterPort(taken);
      const dir = await mkdtemp(join(tmpdir(), 'af-cluster-'));
      ports.push(port);
      dirs.push(dir);
      // With TLS the node listens on `port` with TLS only (its cluster bus, port + 10000, too).
      const listen = security.tls ? ['--port', '0', '--tls-port', String(port)] : ['--port', String(port)];
      const args = [...listen, '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...serverAccess];
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
      args.push('--cluster-node-timeout', '2000', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '');
      await servers.start(port, args, access);
    }
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    const replicas = ['--cluster-replicas', String(replicasPerMaster)];
    await run('redis-cli', [...cliAccess, '--cluster', 'create', ...addresses, ...replicas, '--cluster-yes']);
    // Every node must see the whole cluster (all slots, every node known) before a client is let in.
    for (const port of ports) {
      const probe = connect(port);
      try {
        await waitFor(async () => {
          const info = await probe.cluster('INFO');
          if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${size}`))
            return false;
          // A replica counts once it has synced with its master: a failover needs it.
          const role = (await probe.role()) as unknown[];
          return role[0] === 'master' || role[3] === 'connected';
        }, `cluster_state:ok on :${port}`);
      } finally {
        probe.disconnect();
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return {
    nodes: ports.map((port) => `127.0.0.1:${port}`).join(','),
    ports,
    probe: () => connect(ports[0]!),
    failoverSlotOf: async (key) => {
      const probe = connect(ports[0]!);
      try {
        const slot = await probe.cluster('KEYSLOT', key);
        const nodes = parseNodes(String(await probe.cluster('NODES')));
        const master = nodes.find(
          (node) => node.master && node.slots.some(([a, b]) => a <= slot && slot <= b),
        );
        const replica = nodes.find((node) => node.replicaOf === master?.id);
        if (!master || !replica)
          throw new Error(`no replica of the master of slot ${slot}: start with replicas`);
        const promoted = connect(replica.port);
        try {
          await promoted.cluster('FAILOVER');
          await waitFor(async () => (await promoted.role())[0] === 'master', `:${replica.port} promoted`);
          await waitFor(
            async () => String(await promoted.cluster('INFO')).includes('cluster_state:ok'),
            'cluster_state:ok after the failover',
          );
        } finally {
          promoted.disconnect();
        }
        return { from: master.port, to: replica.port };
      } finally {
        probe.disconnect();
      }
    },
    close,
  };
}

interface ClusterNodeLine {
  id: string;
  port: number;
  master: boolean;
  replicaOf: string | null;
  slots: [number, number][];
}

/** CLUSTER NODES: `<id> <ip:port@bus> <flags> <master id or -> … <slot ranges>`. */
function parseNodes(text: string): ClusterNodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
      return {
        id: id!,
        port: Number(/:(\d+)@/.exec(address!)?.[1]),
        master: flags!.includes('master'),
        replicaOf: masterId === '-' ? null : masterId!,
        slots: slots
          .filter((range) => /^\d/.test(range))
          .map((range) => {
            const [a, b] = range.split('-').map(Number);
            return [a!, b ?? a!] as [number, number];
          }),
      };
    });
}
