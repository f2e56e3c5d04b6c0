// The worker's half of agents that call agents (docs/child-agents.md): a run that stops with children to start
// has each enqueued as a task job of its own (its id derived from the call's key, so a parent resumed after a
// crash never starts a second child for the same call), as a BullMQ child of the parent's job; the parent then
// moves to `waiting-children`, holding no worker slot, and BullMQ moves it back to `waiting` once every child has
// finished, failed ones included. Resumed, it reads each child's published result.
import { DelayedError, WaitingChildrenError, type Job, type Queue } from 'bullmq';
import { treeUsageOf, type ChildOutcome, type ChildRequest } from '../kernel/child-calls.js';
import type { ApprovalPolicy } from '../kernel/approval.js';
import type { AgentResult } from '../kernel/types.js';
import type { CheckpointStore } from './checkpoint-store.js';
import { callKeyOf } from '../kernel/turn-approvals.js';
import type { AgentDefinition } from '../kernel/define-agent.js';
import type { RunState } from '../kernel/types.js';
import { childJobId } from '../queue/child-job-id.js';
import { TASK_JOB_OPTIONS } from '../queue/job-options.js';
import type { AgentTask } from '../queue/task-schema.js';
import { taskJobName } from '../queue/task-job-name.js';
import type { ResultPublisher } from './result-publisher.js';
import type { ChildHolds } from '../fleet/child-holds.js';
import type { Logger } from '../logging/logger.js';

export { childJobId };

export interface LaunchRequest {
  awaiting: readonly ChildRequest[];
  /** The parent's task: its tenant, its depth in the tree. */
  parent: AgentTask;
  batchId: string | undefined;
  /** The parent's approval policy (its agent's or its task's, the stricter): its children's too. */
  approval?: { policy: ApprovalPolicy; timeoutMs: number };
  /** By call key: the W3C traceparent of the call's span, so each child's spans join the parent's trace. */
  traceparents?: Readonly<Record<string, string>>;
}

export class ChildJobs {
  constructor(
    private readonly tasks: Queue,
    private readonly publisher: ResultPublisher,
    private readonly agents: ReadonlyMap<string, AgentDefinition>,
    /** Where a child that failed before its result went out left what it spent. */
    private readonly checkpoints?: Pick<CheckpointStore, 'load'>,
    /** The spend ledger's holds: each child's budget set aside in its parent's scopes before it starts. */
    private readonly holds?: ChildHolds,
  ) {}

  /** The outcomes of the children the checkpoint's turn waits on that have one; undefined when it waits on none. */
  async outcomesFor(checkpoint: RunState | null): Promise<Record<string, ChildOutcome> | undefined> {
    const keys = waitingChildKeys(checkpoint);
    if (keys.length === 0) return undefined;
    const outcomes: Record<string, ChildOutcome> = {};
    await Promise.all(
      keys.map(async ({ key, agent }) => {
        const outcome = await this.outcomeOf(childJobId(key), agent);
        if (outcome) outcomes[key] = outcome;
      }),
    );
    return outcomes;
  }

  /**
   * A child's outcome: its published result; else, for a child that finished without one (it failed for good
   * before its result went out, or the result was trimmed), what its job says, never a second start; nothing
   * while it still runs.
   */
  private async outcomeOf(jobId: string, agent: string): Promise<ChildOutcome | undefined> {
    const result = await this.publisher.published(jobId);
    if (result) return outcomeFrom(result, jobId, agent);
    const job = await this.tasks.getJob(jobId);
    const state = job ? await job.getState() : 'unknown';
    if (job && state === 'completed' && isResult(job.returnvalue))
      return outcomeFrom(job.returnvalue, jobId, agent);
    if (job && state !== 'completed' && state !== 'failed') return undefined;
    // What it spent is in its checkpoint, when one is left: the parent counts it all the same.
    const checkpoint = await this.checkpoints?.load(jobId).catch(() => null);
    const price = checkpoint?.price ?? { inputPerMillion: 0, outputPerMillion: 0 };
    const why = job?.failedReason ?? 'its job and result are gone';
    const usage = checkpoint
      ? treeUsageOf(checkpoint, price)
      : treeUsageOf({ usage: { promptTokens: 0, completionTokens: 0 } }, price);
    // It never settled its hold: what its checkpoint says it spent does (without a checkpoint, the hold expires
    // as spent at its worst case).
    const hold = (job?.data as AgentTask | undefined)?.parent?.hold;
    if (hold && checkpoint) await this.holds?.release(hold, usage).catch(() => undefined);
    return {
      jobId,
      agent,
      status: 'failed',
      stopReason: 'error',
      answer: null,
      usage,
      error: `the child ended without a result: ${why}`,
    };
  }

  /** A child's run ended for good: its hold is settled with what its tree spent (the parent's scopes see it now). */
  async ended(task: AgentTask | null, result: AgentResult, log: Logger): Promise<void> {
    const hold = task?.parent?.hold;
    if (!hold || !this.holds) return;
    // Unsettled, the hold expires as spent at its worst case: the caps count too much, never too little.
    await this.holds
      .release(hold, result.usage)
      .catch((err: unknown) => log.warn({ err }, 'could not settle the hold'));
  }

  /** Starts the turn's children and parks the parent until they have all finished. Never returns. */
  async launch(job: Job, token: string | undefined, request: LaunchRequest, log: Logger): Promise<never> {
    const depth = (request.parent.parent?.depth ?? 0) + 1;
    const parentJobId = String(job.id);
    await Promise.all(
      request.awaiting.map(async (child) => {
        const jobId = childJobId(child.callKey);
        const task = this.childTask(child, request, parentJobId, depth);
        const hold = await this.holdFor(jobId, String(job.timestamp), task, request, log);
        if (hold && task.parent) task.parent.hold = hold;
        return this.tasks.add(taskJobName(task), task, {
          ...TASK_JOB_OPTIONS,
          jobId,
          parent: { id: parentJobId, queue: job.queueQualifiedName },
          // A child that fails still lets its parent go on: its result says how it ended.
          ignoreDependencyOnFailure: true,
        });
      }),
    );
    log.info({ children: request.awaiting.map((c) => c.agent) }, 'waiting for child agents');
    if (await job.moveToWaitingChildren(token ?? '')) throw new WaitingChildrenError();
    // Every child finished already (a parent resumed after a crash): straight back to the queue.
    await job.moveToDelayed(Date.now(), token);
    throw new DelayedError();
  }

  /**
   * The hold of a child not enqueued yet (a child already in the queue, from before a crash, has its own or
   * none); none when a cap of the parent's scopes cannot cover the child's whole budget: the child then runs call
   * by call against those caps, as any task does, and stops where they refuse it.
   */
  private async holdFor(
    jobId: string,
    parentInstance: string,
    task: AgentTask,
    request: LaunchRequest,
    log: Logger,
  ): Promise<string | undefined> {
    const budget = task.budget;
    const until = task.parent?.deadlineAt;
    if (!this.holds || !budget?.maxTokens || budget.maxCostUsd === undefined || until === undefined) return;
    if (await this.tasks.getJob(jobId)) return;
    const parent = request.parent;
    const held = await this.holds.take(
      {
        ...(request.batchId ? { batchId: request.batchId } : {}),
        ...(parent.tenant ? { tenant: parent.tenant } : {}),
        ...(parent.parent?.hold ? { hold: parent.parent.hold } : {}),
      },
      jobId,
      { maxTokens: budget.maxTokens, maxCostUsd: budget.maxCostUsd },
      until,
      parentInstance,
    );
    if (held.ok) return held.ticket;
    log.info(
      { child: jobId, refusal: held.message },
      "a child's budget could not be set aside: it runs call by call",
    );
    return undefined;
  }

  /** The child's task: its input, a budget no larger than its share of the parent's (nor its own agent's). */
  private childTask(
    child: ChildRequest,
    request: LaunchRequest,
    parentJobId: string,
    depth: number,
  ): AgentTask {
    const agent = this.agents.get(child.agent);
    const input = child.input as Record<string, unknown>;
    const own = agent?.budget ?? {};
    const ceiling = agent?.budgetCeiling ?? {};
    const least = (carved: number, ...limits: (number | undefined)[]) =>
      Math.min(carved, ...limits.filter((l): l is number => l !== undefined));
    // A person asked to read every side effect of the parent reads its children's too.
    const policy = request.approval?.policy ?? request.parent.approval;
    const timeoutMs = request.approval?.timeoutMs ?? request.parent.approvalTimeoutMs;
    const approval =
      policy === 'side-effects'
        ? { approval: policy, ...(timeoutMs !== undefined ? { approvalTimeoutMs: timeoutMs } : {}) }
        : {};
    return {
      agent: child.agent,
      ...(agent?.input ? { input } : { task: String(input['task'] ?? '') }),
      budget: {
        maxTokens: least(child.budget.maxTokens, own.maxTokens, ceiling.maxTokens),
        maxCostUsd: least(child.budget.maxCostUsd, own.maxCostUsd, ceiling.maxCostUsd),
        deadlineMs: least(child.budget.deadlineMs, own.deadlineMs, ceiling.deadlineMs),
      },
      ...(request.parent.tenant ? { tenant: request.parent.tenant } : {}),
      ...approval,
      parent: {
        jobId: parentJobId,
        callKey: child.callKey,
        depth,
        ...(request.batchId ? { batchId: request.batchId } : {}),
        // Its share of time counts from now, however long it then waits in the queue for a worker.
        deadlineAt: Date.now() + child.budget.deadlineMs,
        ...(request.traceparents?.[child.callKey]
          ? { traceparent: request.traceparents[child.callKey] }
          : {}),
      },
    } as AgentTask;
  }
}

/** The keys (and agents) of a checkpoint's children still without a result. */
function waitingChildKeys(state: RunState | null): { key: string; agent: string }[] {
  const pending = state?.pending;
  if (!state || !pending?.children) return [];
  const keys: { key: string; agent: string }[] = [];
  pending.children.forEach((slot, i) => {
    if (slot && !pending.results[i])
      keys.push({ key: callKeyOf(state.runId, state.steps, i), agent: slot.agent });
  });
  return keys;
}

function outcomeFrom(result: AgentResult, jobId: string, agent: string): ChildOutcome {
  return {
    jobId,
    agent,
    status: result.status,
    stopReason: result.stopReason ?? (result.status === 'succeeded' ? 'answer' : 'error'),
    answer: result.answer ?? null,
    ...(result.output !== undefined ? { output: result.output } : {}),
    usage: result.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
    ...(result.stopDetail ? { stopDetail: result.stopDetail } : {}),
    error: result.error?.message ?? null,
  };
}

/** A job's return value that is a run's result (the processor returns one). */
function isResult(value: unknown): value is AgentResult {
  return (
    typeof value === 'object' && value !== null && typeof (value as { status?: unknown }).status === 'string'
  );
}

/**
 * A child stopped by its own budget says whose that budget was: the share its parent gave it (a cap of the
 * fleet already names itself).
 */
export function withChildStopDetail(result: AgentResult): AgentResult {
  const detail = result.stopDetail;
  if (!detail || !/^(cost|token) budget: /.test(detail)) return result;
  return { ...result, stopDetail: `the ${detail.replace(': ', ' its parent agent gave it: ')}` };
}
