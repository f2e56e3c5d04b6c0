// The task a child agent's job is given (src/worker/child-jobs.ts), with the queue and the parent's job as
// stand-ins that record what they are asked.
import { WaitingChildrenError, type Job, type Queue } from 'bullmq';
import { expect, it } from 'vitest';
import { defineAgent } from '../../../src/kernel/define-agent.js';
import type { ChildRequest } from '../../../src/kernel/child-calls.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { AgentTask } from '../../../src/queue/task-schema.js';
import { ChildJobs } from '../../../src/worker/child-jobs.js';
import type { ResultPublisher } from '../../../src/worker/result-publisher.js';

const notifier = defineAgent({ name: 'notifier', description: 'Emails one person.', tools: ['send_email'] });

async function childTaskOf(parent: AgentTask): Promise<AgentTask> {
  const added: AgentTask[] = [];
  const tasks = { add: async (_name: string, data: AgentTask) => (added.push(data), {}) } as unknown as Queue;
  const job = {
    id: 'p1',
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
  const children = new ChildJobs(tasks, {} as ResultPublisher, new Map([['notifier', notifier]]));
  await expect(
    children.launch(job, 'token', { awaiting, parent, batchId: undefined }, createLogger('t', 'silent')),
  ).rejects.toBeInstanceOf(WaitingChildrenError);
  return added[0]!;
}

it('a task that asked for approvals (side-effects) passes that policy on to the children it starts', async () => {
  // docs/approvals.md: "a task may ask for approvals, never switch its agent's off". A nightly batch enqueued with
  // approval side-effects so that a person reads each email: the parent delegates to a notifier, whose
  // send_email calls would go out unread.
  const child = await childTaskOf({
    agent: 'campaign',
    task: 'email the campaign',
    approval: 'side-effects',
    approvalTimeoutMs: 3_600_000,
  } as AgentTask);
  expect(child.approval).toBe('side-effects');
});
