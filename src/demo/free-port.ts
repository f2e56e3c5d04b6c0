import net from 'node:net';

/** The preferred port when it is free on 127.0.0.1, else one the system picks. */
export async function freePort(preferred: number): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number | null>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => {
        const chosen = (server.address() as net.AddressInfo).port;
        server.close(() => resolve(chosen));
      });
    });
  return (await tryPort(preferred)) ?? (await tryPort(0))!;
}
