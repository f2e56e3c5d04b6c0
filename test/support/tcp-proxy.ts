// A TCP proxy the test can cut and restore, to take a real server "down" for one client without touching
// the server itself.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Refuses new connections and drops the open ones. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
  /** Client connections accepted so far. */
  accepted(): number;
  /**
   * The next bytes the server sends are thrown away and that connection is dropped: the command ran, its reply
   * was lost (the client sees a connection closed before the answer).
   */
  loseNextReply(): void;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  let accepted = 0;
  let loseReply = false;

  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        accepted++;
        const upstream = net.connect(targetPort, targetHost);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.pipe(upstream);
        upstream.on('data', (data: Buffer) => {
          if (!loseReply) return void client.write(data);
          loseReply = false;
          client.destroy();
          upstream.destroy();
        });
        upstream.on('end', () => client.end());
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });

  await listen();
  return {
    get port() {
      return port;
    },
    cut: stop,
    restore: listen,
    close: stop,
    accepted: () => accepted,
    loseNextReply: () => {
      loseReply = true;
    },
  };
}
