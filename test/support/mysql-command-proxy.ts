// A TCP proxy in front of MariaDB/MySQL that reads the client's side of the protocol and records every command
// it sends (COM_QUERY with its text, COM_RESET_CONNECTION, ...): the exact round trips of a client, which the
// server's own counters (shared by every test running at once) cannot give. A command is a client packet with
// sequence id 0; the handshake response (sequence 1) and auth exchanges are not commands.
import net from 'node:net';

export const COM_QUERY = 0x03;
export const COM_RESET_CONNECTION = 0x1f;

export interface MysqlCommand {
  /** The command byte (COM_QUERY, COM_RESET_CONNECTION, ...). */
  command: number;
  /** The SQL text of a COM_QUERY. */
  sql?: string;
  /** Which client connection sent it, numbered from 1 in the order they were accepted. */
  connection: number;
}

export interface MysqlCommandProxy {
  port: number;
  /** Commands recorded since the start or the last clear(), in order. */
  commands(): MysqlCommand[];
  clear(): void;
  close(): Promise<void>;
}

export async function startMysqlCommandProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<MysqlCommandProxy> {
  const sockets = new Set<net.Socket>();
  let recorded: MysqlCommand[] = [];
  let accepted = 0;
  const server = net.createServer((client) => {
    const connection = ++accepted;
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        const length = pending.readUIntLE(0, 3);
        if (pending.length < 4 + length) break;
        const sequence = pending[3];
        const payload = pending.subarray(4, 4 + length);
        if (sequence === 0 && payload.length > 0) {
          const command = payload[0] as number;
          recorded.push({
            command,
            connection,
            ...(command === COM_QUERY ? { sql: payload.subarray(1).toString('utf8') } : {}),
          });
        }
        pending = pending.subarray(4 + length);
      }
    });
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    commands: () => [...recorded],
    clear: () => {
      recorded = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
