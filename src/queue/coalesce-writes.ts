// Every Redis command ioredis sends is its own write(2) on the socket, and on this kind of machine a write on a
// loopback TCP socket costs tens of µs (it runs the receiver's side too and wakes it up). A worker's step issues
// half a dozen commands at once (checkpoint, parked trace, progress, log line, spend settlement and the next
// booking), and with many jobs in flight several steps end in the same turn of the event loop. So the socket is
// corked on the first write of a turn and uncorked at its end (setImmediate, after the turn's I/O callbacks and
// promise reactions): everything written meanwhile, by every job, leaves in one writev(2). The order of the
// commands, their replies and their error handling are unchanged; a command waits at most for the end of the
// turn that sent it.
// ioredis's own enableAutoPipelining does the same with a Pipeline object per batch, which costs more CPU than
// the system calls it saves (it copies every script BullMQ defines into each pipeline).
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';

const coalesced = new WeakSet<Socket>();

export function coalesceWrites(redis: Redis): void {
  const onConnect = () => {
    const socket = redis.stream as Socket | undefined;
    if (!socket || coalesced.has(socket)) return;
    coalesced.add(socket);
    const write = socket.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      socket.uncork();
    };
    // Explicit parameters, not a rest array: this runs for every command.
    socket.write = function (this: Socket, chunk: unknown, encoding?: unknown, callback?: unknown) {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      return (write as (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean).call(
        this,
        chunk,
        encoding,
        callback,
      );
    } as Socket['write'];
  };
  onConnect();
  redis.on('connect', onConnect);
}
