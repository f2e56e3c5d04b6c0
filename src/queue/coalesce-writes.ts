// A worker's step issues half a dozen Redis commands at once (checkpoint, parked trace, progress, log line, spend
// settlement and the next booking), and with many jobs in flight several steps end in the same turn of the event
// loop; ioredis writes each command on its own. The connection's socket (a new one after each reconnect)
// coalesces the writes of a turn into one system call (src/util/coalesce-socket-writes.ts).
// ioredis's own enableAutoPipelining does the same with a Pipeline object per batch, which costs more CPU than
// the system calls it saves (it copies every script BullMQ defines into each pipeline).
import type { Socket } from 'node:net';
import { Cluster, type Redis } from 'ioredis';
import { coalesceSocketWrites } from '../util/coalesce-socket-writes.js';

export function coalesceWrites(redis: Redis | Cluster): void {
  if (redis instanceof Cluster) {
    // A cluster's commands go out on one connection per node, each made (and remade) as the cluster learns
    // its nodes: each is coalesced as it appears.
    for (const node of redis.nodes()) coalesceWrites(node);
    redis.on('+node', (node: Redis) => coalesceWrites(node));
    return;
  }
  const onConnect = () => {
    const socket = redis.stream as Socket | undefined;
    if (socket) coalesceSocketWrites(socket);
  };
  onConnect();
  redis.on('connect', onConnect);
}
