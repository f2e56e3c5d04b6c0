// Fault suite, a result a Sentinel failover loses: a publisher on the fleet's Sentinel connection publishes a
// result every few milliseconds while SENTINEL FAILOVER runs. The old master takes some of them after its replica
// was promoted, and they are not on the new master; once the connection is on the new master, every result
// published is there (ResultPublisher.publishAgainIfLost, called by watchServerChange as the worker calls it).
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { RESULTS_QUEUE, resultJobId } from '../../../src/queue/names.js';
import { createRedis, type RedisClient } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { watchServerChange } from '../../../src/queue/server-change.js';
import { ResultPublisher } from '../../../src/worker/result-publisher.js';
import { printFigures } from '../../support/fault-figures.js';
import { startLocalSentinel, type LocalSentinel } from '../../support/redis-sentinel.js';
import { succeededResult } from '../../support/agent-result.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

const prefix = `test-lost-${randomBytes(4).toString('hex')}`;
let sentinel: LocalSentinel;
let redis: RedisClient;
let results: Queue;

setupOrFail(async () => {
  sentinel = await startLocalSentinel();
  redis = createRedis(redisTarget({ sentinels: sentinel.sentinels, sentinelName: sentinel.name }), 'worker');
  results = new Queue(RESULTS_QUEUE, { connection: redis, prefix });
});

afterAll(async () => {
  await results?.close();
  if (redis) {
    await deleteKeysWithPrefix(redis, prefix).catch(() => undefined);
    redis.disconnect();
  }
  await sentinel?.close();
});

const result = (jobId: string) => succeededResult(jobId);

it('results the old master took after the promotion are published again on the new master', async () => {
  const publisher = new ResultPublisher(results);
  let republished: Promise<string[]> | undefined;
  const stop = watchServerChange(redis, () => (republished = publisher.publishAgainIfLost()));
  await redis.ping();
  const ids: string[] = [];
  let publishing = true;
  const publishing$ = (async () => {
    for (let i = 0; publishing; i++) {
      const id = `r${i}`;
      await publisher.publish(result(id));
      ids.push(id);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const newMaster = await sentinel.failover();
  // The connection follows the sentinels; a little more publishing on the new master, then stop.
  const switched = Date.now();
  while (!republished && Date.now() - switched < 10_000) await new Promise((r) => setTimeout(r, 50));
  await new Promise((resolve) => setTimeout(resolve, 200));
  publishing = false;
  await publishing$;
  stop();
  const again = await republished;

  const found = await Promise.all(ids.map((id) => results.getJob(resultJobId(id))));
  const missing = ids.filter((_, i) => !found[i]);
  printFigures('sentinel-lost-result', { published: ids.length, publishedAgain: again?.length ?? 0 });
  expect(newMaster).toBe(sentinel.replicaPort);
  expect(again).toBeDefined();
  expect(missing).toEqual([]);
}, 60_000);
