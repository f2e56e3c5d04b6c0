// Every Redis command ioredis sends is its own write(2) on the socket, and on this kind of machine a system call
// on a loopback TCP socket costs about as much CPU as a small Lua script on the server. A worker's step issues
// half a dozen commands at once (checkpoint, parked trace, progress, log line, spend settlement, the next
// booking), so the connection's socket is corked on its first write of a tick and uncorked once that tick's
// callbacks and promise reactions have run: everything written meanwhile leaves in one writev(2). The order of
// the commands, their replies and their error handling are unchanged; a command waits at most for the end of
// the tick that sent it.
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
        process.nextTick(uncork);
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
