// The hold a parent takes for a child (src/worker/child-jobs.ts, src/fleet/child-holds.ts): the same when a
// parent resumed after a crash launches the same child again, a new one when a new job reuses the parent's id (an
// idempotency key enqueued again once the first job is gone), whose children then have the same job ids. A hold's
// scope keeps what the child spent in it for as long as a batch's: a new child given the old hold would find it
// spent. The queue, the parent's job and the ledger are stand-ins that record what they are asked.
import { WaitingChildrenError, type Job, type Queue } from 'bullmq';
import { expect, it } from 'vitest';
import { ChildHolds } from '../../../src/fleet/child-holds.js';
import type { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { decodeTicket, encodeTicket } from '../../../src/fleet/spend-tickets.js';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import type { ChildRequest } from '../../../src/kernel/child-calls.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { AgentTask } from '../../../src/queue/task-schema.js';
import { ChildJobs } from '../../../src/worker/child-jobs.js';
import type { ResultPublisher } from '../../../src/worker/result-publisher.js';

const notifier = defineAgent({ name: 'notifier', description: 'Emails one person.', tools: ['send_email'] });

/** The id of the hold the parent's job (its id, its creation time) takes for its child. */
async function holdIdOfLaunch(timestamp: number): Promise<string> {
  const added: AgentTask[] = [];
  const tasks = {
    add: async (_name: string, data: AgentTask) => (added.push(data), {}),
    getJob: async () => undefined,
  } as unknown as Queue;
  const ledger = {
    reserve: async (scopes: string[], _worst: unknown, options: { id: string }) => ({
      ok: true,
      ticket: encodeTicket({ id: options.id, scopes }),
      expiresAt: 0,
    }),
    setCaps: async () => undefined,
  } as unknown as SpendLedger;
  const job = {
    id: 'p1',
    timestamp,
    queueQualifiedName: 'bull:agent-tasks',
    moveToWaitingChildren: async () => true,
  } as unknown as Job;
  const awaiting: ChildRequest[] = [
    {
      callKey: 'p1:1:1',
      callId: 'c1',
      step: 1,
      agent: 'notifier',
      input: { task: 'email the campaign to everyone' },
      budget: { maxTokens: 5_000, maxCostUsd: 0.01, deadlineMs: 60_000 },
    },
  ];
  const children = new ChildJobs(
    tasks,
    {} as ResultPublisher,
    new Map([['notifier', notifier]]),
    undefined,
    new ChildHolds(ledger),
  );
  const parent = { agent: 'campaign', task: 'email the campaign' } as AgentTask;
  await expect(
    children.launch(job, 'token', { awaiting, parent, batchId: 'b1' }, createLogger('t', 'silent')),
  ).rejects.toBeInstanceOf(WaitingChildrenError);
  return decodeTicket(added[0]!.parent!.hold!).id;
}

it('a parent resumed after a crash takes the same hold; a new job that reuses its id takes another', async () => {
  expect(await holdIdOfLaunch(1_000)).toBe(await holdIdOfLaunch(1_000));
  expect(await holdIdOfLaunch(2_000)).not.toBe(await holdIdOfLaunch(1_000));
});
