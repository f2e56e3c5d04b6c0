// An outage where the data database stops answering instead of refusing (a network partition, a frozen server):
// the model's SQL (sent alone now that the session is set once per connection) times out on the client, and so
// does the KILL QUERY sent from a new connection. That is the database being away, not the model's query being
// slow, so it must be a transient (infrastructure) error, never "filter with WHERE".
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ToolError } from '../../../src/kernel/errors.js';
import { openDataDatabase, type DataDatabase } from '../../../src/tools/data-database.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';

const data = new SeededDataDatabase('hang');
const { host: HOST, port: PORT } = data;

let proxy: StallingProxy;
let db: DataDatabase;

beforeAll(async () => {
  await data.seed();
  proxy = await startStallingProxy(HOST, PORT);
  db = await openDataDatabase(data.readerUrl(proxy.port), { connectionLimit: 1, connectTimeoutMs: 2_000 });
}, 60_000);

afterAll(async () => {
  proxy?.resume();
  await Promise.race([db?.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
  await proxy?.close();
  const root = data.rootPool({ connectionLimit: 1 });
  await data.drop(root);
  await root.end();
});

it('a server that stops answering is a transient error, not a slow query', async () => {
  // The pool keeps this connection open, its session set: the next query reuses it and sends its SQL at once.
  expect((await db.query('SELECT 1 AS one')).rows).toEqual([[1]]);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  proxy.stall();
  const error = await db.query('SELECT COUNT(*) FROM orders').catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ToolError);
  expect((error as ToolError).code, (error as Error).message).toBe('data_db_unavailable');
  expect((error as ToolError).transient).toBe(true);
  expect((error as Error).message).not.toMatch(/WHERE/);
  proxy.resume();
  // The stalled connection was dropped; a new one serves the next query.
  expect((await db.query('SELECT 2 AS two')).rows).toEqual([[2]]);
}, 60_000);

it('a server that stops answering right after a query gives a transient error, not a wait without end', async () => {
  const url = data.readerUrl(proxy.port);
  const stuck = await openDataDatabase(url, { connectionLimit: 1, connectTimeoutMs: 2_000 });
  try {
    expect((await stuck.query('SELECT 1 AS one')).rows).toEqual([[1]]);
    // At once, while the end of the last answer may still be on the wire.
    proxy.stall();
    const started = Date.now();
    const error = await stuck
      .query('SELECT COUNT(*) FROM orders', { timeoutMs: 2_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code, (error as Error).message).toBe('data_db_unavailable');
    expect((error as ToolError).transient).toBe(true);
    // The query's 2 s + 1 s, then the KILL QUERY's connect (2 s), with headroom.
    expect(Date.now() - started).toBeLessThan(20_000);
  } finally {
    proxy.resume();
    await Promise.race([stuck.close(), new Promise((resolve) => setTimeout(resolve, 2_000))]);
  }
}, 60_000);

it('a server that stops answering the reset before a screened statement is a transient error', async () => {
  const url = data.readerUrl(proxy.port);
  const screened = await openDataDatabase(url, { connectionLimit: 1, connectTimeoutMs: 2_000 });
  try {
    expect((await screened.query('SELECT 1 AS one')).rows).toEqual([[1]]);
    proxy.stall();
    // `@` sends the statement through a reset session (src/tools/data-session.ts): the reset gets no answer.
    const error = await screened.query('SELECT @x AS x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code, (error as Error).message).toBe('data_db_unavailable');
    expect((error as ToolError).transient).toBe(true);
  } finally {
    proxy.resume();
    await Promise.race([screened.close(), new Promise((resolve) => setTimeout(resolve, 2_000))]);
  }
}, 60_000);

interface StallingProxy {
  port: number;
  /** Open connections stay open but nothing passes either way (and new ones are held the same way). */
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

async function startStallingProxy(host: string, port: number): Promise<StallingProxy> {
  const sockets = new Set<Socket>();
  let stalled = false;
  const server: Server = createServer((client) => {
    const upstream = netConnect(port, host);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('error', () => undefined);
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
      // Dropped, not buffered, while stalled: what was sent meanwhile is lost, as in a partition.
      from.on('data', (chunk: Buffer) => {
        if (!stalled) to.write(chunk);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    stall: () => {
      stalled = true;
    },
    resume: () => {
      stalled = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
