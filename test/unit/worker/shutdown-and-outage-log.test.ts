// The pure parts of shutdown and outage logging: repeated signals, and many connection errors folded into
// one line per outage. Their processes are tested in fleet-shutdown and fleet-redis-outage.
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { isConnectionError, RedisOutageLog } from '../../../src/queue/redis-outage-log.js';
import { handleShutdownSignals } from '../../../src/worker/shutdown-signals.js';

function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });

describe('handleShutdownSignals', () => {
  let remove: (() => void) | undefined;
  afterEach(() => remove?.());

  it('stops once, logs a repeated signal, hurries on the third, and exits 0 when the stop is done', async () => {
    const { logger, lines } = capturedLogger();
    const exits: number[] = [];
    let stops = 0;
    let hurried = 0;
    remove = handleShutdownSignals({
      logger,
      stop: async () => {
        stops++;
        await sleep(100);
      },
      hurry: () => hurried++,
      exit: (code) => exits.push(code),
    });
    process.emit('SIGTERM', 'SIGTERM');
    process.emit('SIGINT', 'SIGINT');
    expect(hurried).toBe(0);
    process.emit('SIGTERM', 'SIGTERM');
    process.emit('SIGTERM', 'SIGTERM');
    expect(hurried).toBe(1);
    expect(exits).toEqual([]);
    await sleep(200);
    expect({ stops, exits }).toEqual({ stops: 1, exits: [0] });
    expect(lines.map((l) => l['msg'])).toEqual([
      'shutting down',
      'shutdown already in progress (a third signal stops waiting for running jobs)',
      'shutdown already in progress: not waiting any longer',
      'shutdown already in progress',
    ]);
  });

  it('exits 1 when the stop fails', async () => {
    const { logger } = capturedLogger();
    const exits: number[] = [];
    remove = handleShutdownSignals({
      logger,
      stop: () => Promise.reject(new Error('pool end failed')),
      exit: (code) => exits.push(code),
    });
    process.emit('SIGTERM', 'SIGTERM');
    await sleep(10);
    expect(exits).toEqual([1]);
  });
});

describe('RedisOutageLog', () => {
  it('folds an outage of many errors from many emitters into one warning and one recovery line', async () => {
    const { logger, lines } = capturedLogger();
    const connection = Object.assign(new EventEmitter(), { status: 'reconnecting' });
    const queue = new EventEmitter();
    const worker = new EventEmitter();
    new RedisOutageLog(logger, 50)
      .watchConnection(connection as unknown as Redis)
      .watch(queue, 'queue')
      .watch(worker, 'worker');
    for (let i = 0; i < 30; i++) [connection, queue, worker][i % 3]!.emit('error', refused());
    connection.status = 'ready';
    connection.emit('ready');
    // A straggler right after the reconnection belongs to the same outage.
    worker.emit('error', new Error('Connection is closed.'));
    await sleep(150);
    expect(lines.map((l) => [l['level'], l['msg']])).toEqual([
      [40, 'redis unreachable: retrying until it is back'],
      [30, 'redis reachable again'],
    ]);
    expect(lines[0]).toMatchObject({ code: 'ECONNREFUSED' });
    expect(lines[0]).not.toHaveProperty('err');
    expect(lines[1]).toMatchObject({ errors: 31 });

    // A second outage is a second pair of lines; an error of another kind is logged as it is.
    connection.status = 'reconnecting';
    queue.emit('error', refused());
    queue.emit('error', new Error('ERR unknown command'));
    connection.status = 'ready';
    connection.emit('ready');
    await sleep(150);
    expect(lines.slice(2).map((l) => l['msg'])).toEqual([
      'redis unreachable: retrying until it is back',
      'queue error',
      'redis reachable again',
    ]);
  });

  it('tells connection errors from others by code or ioredis name', () => {
    expect(isConnectionError(refused())).toBe(true);
    expect(isConnectionError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' }))).toBe(
      true,
    );
    expect(isConnectionError(new Error('Connection is closed.'))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('NOSCRIPT'), { code: 'NOSCRIPT' }))).toBe(false);
    expect(isConnectionError(new Error('Missing lock for job 1'))).toBe(false);
    expect(isConnectionError('ECONNREFUSED')).toBe(false);
  });
});
