// Scenario 9: what the fleet leaves in Redis. One worker with the documented retention defaults
// (src/queue/retention.ts: 10,000 completed task jobs for a day, 10,000 results for a week, failed jobs a week)
// runs `jobs` tasks of `steps` steps against a Redis server of its own (so used_memory is the fleet's alone),
// concurrency 200, the model at zero latency. used_memory before the first job and after the last one (and
// once more after `settleMs`, when the retention's trims have run), and what each queue still holds.
import { Redis } from 'ioredis';
import { FleetClient } from '../../src/client/fleet-client.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../src/queue/names.js';
import { createNamespace, log, QueueWatch, sleep, startAgentWorker, startModelServer } from '../lib/fleet.js';
import { startPrivateRedis } from '../lib/private-redis.js';
import { enqueueTasks } from '../lib/tasks.js';

export interface RedisMemoryResult {
  jobs: number;
  steps: number;
  usedMemoryIdleMb: number;
  usedMemoryAfterMb: number;
  /** (after − idle) / jobs. */
  bytesPerJob: number;
  keys: number;
  /** Jobs kept per queue and state after the run. */
  kept: Record<string, number>;
  /** Keys by kind (the prefix's third part: `agent-tasks`, `agent-checkpoint`, …). */
  keysByKind: Record<string, number>;
}

export async function redisMemory(options: {
  jobs: number;
  steps: number;
  concurrency: number;
  tool: string;
  settleMs: number;
}): Promise<RedisMemoryResult> {
  const ns = createNamespace('redis-memory', true);
  const redis = await startPrivateRedis();
  const client = new FleetClient({ redisUrl: redis.url, prefix: ns.prefix });
  const watch = new QueueWatch(ns.prefix, TASKS_QUEUE, redis.url);
  const model = await startModelServer(0, options.tool);
  const worker = startAgentWorker(ns, model, {
    concurrency: options.concurrency,
    env: { REDIS_URL: redis.url },
  });
  const reader = new Redis(redis.url);
  try {
    // Warm: the worker has started, registered its queues and schedules, and run a few jobs.
    await enqueueTasks(client, 'warm', 10, options.steps);
    await watch.waitForCompleted(10, worker, 120_000);
    await sleep(500);
    const idle = await redis.usedMemory();
    log(`redis memory: ${options.jobs} jobs of ${options.steps} steps, retention at its defaults`);
    // Not by the completed count: the retention trims it at 10,000. Done when nothing waits or runs any more.
    const unfinished = async () => {
      const key = (state: string) => `${ns.prefix}:${TASKS_QUEUE}:${state}`;
      const [wait, active, delayed, prioritized] = await Promise.all([
        reader.llen(key('wait')),
        reader.llen(key('active')),
        reader.zcard(key('delayed')),
        reader.zcard(key('prioritized')),
      ]);
      return wait + active + delayed + prioritized;
    };
    for (let done = 0; done < options.jobs; done += 1_000) {
      await enqueueTasks(client, `mem${done}`, Math.min(1_000, options.jobs - done), options.steps);
      const deadline = Date.now() + 300_000;
      while ((await unfinished()) > 0) {
        if (!worker.alive() || Date.now() > deadline)
          throw new Error(
            `redis memory: jobs left unfinished. Worker output:\n${worker.output().slice(-3000)}`,
          );
        await sleep(100);
      }
    }
    const failed = await reader.zcard(`${ns.prefix}:${TASKS_QUEUE}:failed`);
    if (failed > 0) throw new Error(`redis memory: ${failed} jobs failed`);
    await sleep(options.settleMs);
    const after = await redis.usedMemory();
    const keysByKind: Record<string, number> = {};
    let keys = 0;
    let cursor = '0';
    do {
      const [next, batch] = await reader.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) {
        keys++;
        const kind = key.split(':')[1]?.replace(/^\{|\}$/g, '') ?? key;
        keysByKind[kind] = (keysByKind[kind] ?? 0) + 1;
      }
    } while (cursor !== '0');
    const kept: Record<string, number> = {};
    for (const queue of [TASKS_QUEUE, RESULTS_QUEUE]) {
      for (const state of ['completed', 'failed']) {
        kept[`${queue} ${state}`] = await reader.zcard(`${ns.prefix}:${queue}:${state}`);
      }
    }
    return {
      jobs: options.jobs,
      steps: options.steps,
      usedMemoryIdleMb: idle / 2 ** 20,
      usedMemoryAfterMb: after / 2 ** 20,
      bytesPerJob: (after - idle) / options.jobs,
      keys,
      kept,
      keysByKind,
    };
  } finally {
    reader.disconnect();
    await worker.stop(10_000);
    await model.child.stop();
    await client.close();
    watch.close();
    await redis.close();
    await ns.cleanup();
  }
}
