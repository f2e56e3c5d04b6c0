// The worker's Redis connection sends the commands of one turn of the event loop in one write (coalesce-writes.ts),
// against the real Redis of REDIS_URL under a key prefix of its own, deleted at the end.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../../src/queue/redis.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const PREFIX = `test-coalesce-${randomBytes(4).toString('hex')}`;

let worker: Redis;
let admin: Redis;

beforeAll(async () => {
  worker = createRedis(REDIS_URL, 'worker');
  admin = createRedis(REDIS_URL, 'producer');
  await worker.ping();
});

afterAll(async () => {
  const keys = await admin.keys(`${PREFIX}:*`);
  if (keys.length > 0) await admin.del(...keys);
  worker.disconnect();
  admin.disconnect();
});

/** Counts the writes that reach the socket's handle (one per write(2)/writev(2) Node makes). */
function countSocketWrites(redis: Redis): { writes: () => number } {
  const socket = redis.stream as Socket & {
    _write: (...args: unknown[]) => void;
    _writev: (...args: unknown[]) => void;
  };
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name].bind(socket);
    socket[name] = (...args: unknown[]) => {
      writes++;
      original(...args);
    };
  }
  return { writes: () => writes };
}

describe('coalesced writes on the worker connection', () => {
  it('sends the commands of one turn in one write, replies in order', async () => {
    const counter = countSocketWrites(worker);
    const key = `${PREFIX}:list`;
    const sent = [
      worker.set(`${PREFIX}:a`, '1'),
      worker.incr(`${PREFIX}:a`),
      worker.rpush(key, 'x', 'y'),
      worker.lrange(key, 0, -1),
      worker.eval('return ARGV[1]', 0, 'lua'),
      worker.get(`${PREFIX}:missing`),
    ];
    expect(await Promise.all(sent)).toEqual(['OK', 2, 2, ['x', 'y'], 'lua', null]);
    expect(counter.writes()).toBe(1);

    // Commands sent once the replies came are a new turn: a second write, still answered.
    await worker.incr(`${PREFIX}:a`);
    expect(counter.writes()).toBe(2);
  });

  it('an error reply fails only its own command', async () => {
    const sent = [
      worker.set(`${PREFIX}:s`, 'text'),
      worker.incr(`${PREFIX}:s`).catch((error: Error) => error.message),
      worker.get(`${PREFIX}:s`),
    ];
    const [set, failed, get] = await Promise.all(sent);
    expect(set).toBe('OK');
    expect(String(failed)).toMatch(/not an integer/);
    expect(get).toBe('text');
  });

  it('keeps coalescing after the connection is dropped and made again', async () => {
    const id = await worker.client('ID');
    const before = worker.stream;
    await admin.client('KILL', 'ID', String(id));
    // The next command waits in ioredis's offline queue until it has reconnected.
    expect(await worker.ping()).toBe('PONG');
    expect(worker.stream).not.toBe(before);

    const counter = countSocketWrites(worker);
    const replies = await Promise.all([
      worker.ping(),
      worker.set(`${PREFIX}:b`, '2'),
      worker.get(`${PREFIX}:b`),
    ]);
    expect(replies).toEqual(['PONG', 'OK', '2']);
    expect(counter.writes()).toBe(1);
  });
});
