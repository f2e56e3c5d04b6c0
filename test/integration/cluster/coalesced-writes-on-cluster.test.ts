// A worker's cluster connection coalesces a turn's writes as one server's does (coalesce-writes.ts): every node
// connection the cluster opens has its socket's writes of one turn leave in one write. A real 3-master cluster.
import type { Socket } from 'node:net';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';

let cluster: LocalCluster;
let worker: Cluster;

beforeAll(async () => {
  cluster = await startLocalCluster();
  worker = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'worker') as Cluster;
  // Every master answers once: the node connections exist (and were coalesced as they connected).
  await Promise.all(worker.nodes('master').map((node) => node.ping()));
  await worker.get('{c}:warm');
}, 60_000);

afterAll(async () => {
  worker?.disconnect();
  await cluster?.close();
});

/** Counts the writes that reach each node socket's handle (one per write(2)/writev(2) Node makes). */
function countWrites(nodes: Redis[]): () => number {
  let writes = 0;
  for (const node of nodes) {
    const socket = node.stream as Socket & {
      _write: (...a: unknown[]) => void;
      _writev: (...a: unknown[]) => void;
    };
    for (const name of ['_write', '_writev'] as const) {
      const original = socket[name].bind(socket);
      socket[name] = (...args: unknown[]) => {
        writes++;
        original(...args);
      };
    }
  }
  return () => writes;
}

it('sends the commands of one turn for one slot in one write, replies in order', async () => {
  const writes = countWrites(worker.nodes('master'));
  const sent = [
    worker.set('{c}:a', '1'),
    worker.incr('{c}:a'),
    worker.rpush('{c}:list', 'x', 'y'),
    worker.lrange('{c}:list', 0, -1),
    worker.get('{c}:missing'),
  ];
  expect(await Promise.all(sent)).toEqual(['OK', 2, 2, ['x', 'y'], null]);
  expect(writes()).toBe(1);
}, 30_000);
