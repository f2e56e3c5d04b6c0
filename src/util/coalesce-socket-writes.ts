// Every write on a socket is its own system call, and on loopback (and on this kind of machine in general) a
// write on a TCP socket costs tens of µs: it runs the receiver's side too and wakes it up. Clients that write a
// request in pieces (ioredis one command at a time, nodemailer a message chunk by chunk) pay that per piece. So
// the socket is corked on the first write of a turn of the event loop and uncorked at its end (setImmediate,
// after the turn's I/O callbacks and promise reactions): everything written meanwhile leaves in one writev(2).
// Order, callbacks and errors are unchanged; a write waits at most for the end of the turn that made it.
import type { Socket } from 'node:net';

const coalesced = new WeakSet<Socket>();

/** Makes `socket`'s writes of one turn leave together. Idempotent. */
export function coalesceSocketWrites(socket: Socket): void {
  if (coalesced.has(socket)) return;
  coalesced.add(socket);
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  // Explicit parameters, not a rest array: this runs for every write.
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
}
