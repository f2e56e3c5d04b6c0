// ResultPublisher.publishAgainIfLost on a real Redis: the results published lately that the server no longer has
// go out again (a Sentinel failover's new master, test/integration/faults/sentinel-lost-result.test.ts, is where
// they are really lost; here they are removed by hand); those it has are left alone, and none older than what
// the publisher remembers (30 s, or the results retention when it keeps less) is published twice.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { RESULTS_QUEUE, resultJobId } from '../../../src/queue/names.js';
import { watchServerChange } from '../../../src/queue/server-change.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
import { succeededResult } from '../../support/agent-result.js';
import { REDIS_URL } from '../../support/fleet-harness.js';

const prefix = `test-lost-result-${randomBytes(4).toString('hex')}`;
let redis: Redis;
let results: Queue;

beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix });
});

afterAll(async () => {
  vi.useRealTimers();
  await results.close();
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

const result = (jobId: string) => succeededResult(jobId);

const lose = (jobId: string) => results.remove(resultJobId(jobId));
const publishedAnswer = async (jobId: string) =>
  ((await results.getJob(resultJobId(jobId)))?.data as AgentResult | undefined)?.answer;

it('publishes again what the server lost, and only that', async () => {
  const publisher = new ResultPublisher(results);
  for (const id of ['a1', 'a2', 'a3']) await publisher.publish(result(id));
  await lose('a1');
  await lose('a3');
  const stamp = (await results.getJob(resultJobId('a2')))?.timestamp;

  expect(await publisher.publishAgainIfLost()).toEqual(['a1', 'a3']);
  expect(await publishedAnswer('a1')).toBe('answer of a1');
  expect(await publishedAnswer('a3')).toBe('answer of a3');
  expect((await results.getJob(resultJobId('a2')))?.timestamp).toBe(stamp);
  expect(await publisher.publishAgainIfLost()).toEqual([]);
});

it('remembers no more results than the retention keeps', async () => {
  const publisher = new ResultPublisher(results, { keep: { count: 2 } });
  for (const id of ['b1', 'b2', 'b3']) await publisher.publish(result(id));
  for (const id of ['b1', 'b2', 'b3']) await lose(id);
  expect(await publisher.publishAgainIfLost()).toEqual(['b2', 'b3']);
  expect(await publishedAnswer('b1')).toBeUndefined();
});

it('forgets a result 30 s after publishing it', async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    const publisher = new ResultPublisher(results);
    await publisher.publish(result('c1'));
    vi.setSystemTime(Date.now() + 20_000);
    await publisher.publish(result('c2'));
    vi.setSystemTime(Date.now() + 15_000);
    await lose('c1');
    await lose('c2');
    expect(await publisher.publishAgainIfLost()).toEqual(['c2']);
  } finally {
    vi.useRealTimers();
  }
});

it('a reconnection to the same server is no change of server', async () => {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const changes: number[] = [];
  const stop = watchServerChange(connection, () => changes.push(Date.now()));
  try {
    await new Promise((resolve) => connection.once('ready', resolve));
    connection.disconnect(true);
    await new Promise((resolve) => connection.once('ready', resolve));
    await connection.ping();
    await connection.info('server'); // after the watcher's own read of the run id
    expect(changes).toEqual([]);
  } finally {
    stop();
    connection.disconnect();
  }
});
