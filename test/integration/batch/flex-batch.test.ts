// A batch that asks for the flex tier passes it to each of its tasks (a task's own tier wins), on real Redis
// through the client.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TASKS_QUEUE } from '../../../src/queue/names.js';
import { createRedis } from '../../../src/queue/redis.js';
import { createNamespace, REDIS_URL, type FleetNamespace } from '../../support/fleet-harness.js';

let ns: FleetNamespace;
let tasks: Queue;
beforeAll(() => {
  ns = createNamespace('flexbatch');
  tasks = new Queue(TASKS_QUEUE, { connection: createRedis(REDIS_URL, 'producer'), prefix: ns.prefix });
});
afterAll(async () => {
  await tasks.close();
  await ns.cleanup();
});

it('gives every task of a flex batch the flex tier, unless a task names its own', async () => {
  const { jobIds } = await ns.client.enqueueBatch({
    tasks: [{ task: 'overnight report' }, { task: 'urgent one', serviceTier: 'default' }],
    serviceTier: 'flex',
  });
  const [first, second] = await Promise.all(jobIds.map((id) => tasks.getJob(id)));
  expect(first?.data.serviceTier).toBe('flex');
  expect(second?.data.serviceTier).toBe('default');
});
