// The BullMQ processor: one job, one kernel run. It adapts the kernel to the queue (progress, logs, the
// AbortSignal, retries), resumes from the job's checkpoint, writes the trace while the run goes, and on the
// way out records the run and publishes the result exactly once.
//
// Outcomes:  succeeded / stopped             → job completed, its return value the result
//            failed, not worth retrying       → result published, job failed (UnrecoverableError)
//            failed, retryable, attempts left → error rethrown: BullMQ retries with backoff, resuming
//            the worker shutting down         → job released to the queue, resumed by whoever takes it
//            finished, but MySQL is down      → outcome kept in Redis, job delayed (no attempt spent) and
//                                               redelivered until its record lands; the result is published then
//            calls awaiting approval          → approvals recorded, job delayed until decided or expired
//                                               (approval-parking.ts), resumed from its checkpoint
//            cancelled (a mark, or the cancel  → a final `cancelled` result, published like any other
//            channel while it runs)             (task-cancel.ts, docs/cancelling.md)
import {
  DelayedError,
  UnrecoverableError,
  WaitingChildrenError,
  WaitingError,
  type Job,
  type Processor,
} from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import { DEFAULT_AGENT, type AgentDefinition } from '../kernel/define-agent.js';
import { ConfigError, InputError, type RunError, StoreError } from '../kernel/errors.js';
import { usageOf, type Budget } from '../kernel/budget.js';
import { runAgent } from '../kernel/run-agent.js';
import { keptAsFacts } from '../kernel/tool.js';
import type { AgentResult, StepTrace } from '../kernel/types.js';
import { notesOwner, type RunNotes } from './run-notes.js';
import { reusableJobId } from '../effects/reused-job-effects.js';
import type { Env } from '../../config/env.js';
import type { CallGate } from '../kernel/call-gate.js';
import type { ChatModel, ModelApi } from '../kernel/chat-model.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { Logger } from '../logging/logger.js';
import { formatFieldIssues, MAX_TASK_CHARS, validateTask, type AgentTask } from '../queue/task-schema.js';
import type { RunsRepository, StartRunInput } from '../store/runs-repository.js';
import type { CheckpointStore } from './checkpoint-store.js';
import { forgetJobState } from './job-state.js';
import type { OutcomeStore } from './outcome-store.js';
import { retryDelayMs } from '../queue/retry-schedule.js';
import type { ResultPublisher } from './result-publisher.js';
import { RunFinisher, type Finished } from './run-finisher.js';
import { withRetries } from './retry.js';
import { runConfigFor, type RunConfig } from './run-config.js';
import type { ToolProvider } from './tool-provider.js';
import type { RunJournal } from './run-journal.js';
import { TraceWriter } from './trace-writer.js';
import type { BatchTracker } from './batch-tracker.js';
import { StepWrites } from './step-writes.js';
import { batchMembership, parentMembership } from './batch-membership.js';
import { tenantWaitMs, type HeldSlot, type TenantSlots } from '../fleet/tenant-slots.js';
import { clearAwaitingStatus, type ApprovalParking } from './approval-parking.js';
import { withChildStopDetail, type ChildJobs } from './child-jobs.js';
import { launchedCalls, returnedCalls, traceContinues } from './child-call-traces.js';
import { cancelledSignal, cancelMarkOf, endAsCancelled, wakeIfCancelled } from './task-cancel.js';

/** What the fleet's shared limits of a job depend on. */
export interface JobLimits {
  batchId: string | undefined;
  tenant: string | undefined;
  model: string;
  /** A child agent's hold (child-holds.ts): its calls book in it instead. */
  hold?: string;
}
import type { FleetTelemetry } from '../telemetry/fleet-telemetry.js';

/** The abort reason the worker uses when it shuts down: such a job is released, not ended. */
export const SHUTDOWN_REASON = 'worker-shutdown';

export interface TaskProcessorDeps {
  env: Env;
  checkpoints: CheckpointStore;
  /** Outcomes of finished jobs whose record waits for MySQL. */
  outcomes: OutcomeStore;
  /** Parks traces until MySQL has them. */
  redis: RedisClient;
  repository: RunsRepository;
  /** The process's shared MySQL writes: run starts, traces, finishes (run-journal.ts). */
  journal: RunJournal;
  publisher: ResultPublisher;
  tools: ToolProvider;
  /** The agents of the fleet configuration, by name; a task without `agent` runs `default`. */
  agents: ReadonlyMap<string, AgentDefinition>;
  createModel: (model: string, api: ModelApi) => ChatModel;
  /**
   * The fleet's shared limits for a job: its batch's budget, the daily caps (the fleet's, its tenant's), the
   * request and token rates of its model.
   */
  gateFor?: (job: JobLimits) => CallGate;
  /** Per-tenant concurrency (TENANT_CONCURRENCY): a job of a tenant at its limit waits, delayed. */
  tenantSlots?: TenantSlots;
  /** Step and result metrics; none when absent. */
  metrics?: FleetMetrics;
  /** The run's GenAI spans (docs/telemetry.md); none when absent. */
  tracing?: Pick<FleetTelemetry, 'startRun'>;
  /** Records a batch when its first task starts. */
  batches?: BatchTracker;
  /** Parks runs whose calls wait for a decision, and gives resumed ones the decisions; without it such a run fails. */
  approvals?: ApprovalParking;
  /** Starts the child agents a run calls and reads their outcomes; without it a child call is refused. */
  children?: ChildJobs;
  /** Moves aside the effect rows an earlier job of a reused id left (reused-job-effects.ts); none: not done. */
  supersedeEffects?: (jobId: string, createdAt: Date) => Promise<number>;
  /** Notes across tasks, for agents that have them on (docs/notes.md); without it, none. */
  notes?: RunNotes;
  logger: Logger;
}

const STORE_RETRIES = { attempts: 4, baseDelayMs: 250 };

export function createTaskProcessor(
  deps: TaskProcessorDeps,
  finisher: RunFinisher = new RunFinisher(deps),
): Processor<unknown, AgentResult> {
  // validate → resolve the agent → read the job's state → hold its tenant slot → run → end the attempt. The tenant
  // slot a job holds is given back however its run ends.
  return async (job: Job, token: string | undefined, signal: AbortSignal | undefined) => {
    const held: { slot: HeldSlot | null } = { slot: null };
    try {
      const resolved = await resolveTask(deps, finisher, job, token);
      await clearAwaitingStatus(job);
      const attempt = attemptOf(deps, job, token, resolved);
      // Cancelled before this start: the run ends at once, with no model call (task-cancel.ts).
      const [state, cancel] = await Promise.all([
        readJobState(attempt),
        cancelMarkOf(deps, job, attempt.task.parent?.jobId),
      ]);
      if (state.published) return await completedAlready(attempt, state.published);
      if (!state.kept && !cancel) held.slot = await holdTenantSlot(attempt);
      const recording = await startRecording(attempt, state);
      const runSignal = cancel ? cancelledSignal() : signal;
      const ran = state.kept?.result ?? (await runTheAgent(attempt, state, recording, runSignal));
      const result = await endAsCancelled(deps, job, ran, runSignal, cancel, attempt.log);
      return await endAttempt(attempt, finisher, state, recording, result, runSignal).catch(async (error) => {
        // Parked while its cancel was being recorded: woken now, not when a person or its children are done.
        const parked = error instanceof DelayedError || error instanceof WaitingChildrenError;
        if (parked && (result.awaitingApproval || result.awaitingChildren))
          await wakeIfCancelled(deps, job, attempt.log);
        throw error;
      });
    } finally {
      await held.slot
        ?.release()
        .catch((err: unknown) => deps.logger.warn({ err }, 'tenant slot not released'));
    }
  };
}

/** A task that passed validation, the agent it names and what its run is configured with. */
interface ResolvedTask {
  task: AgentTask;
  agent: AgentDefinition;
  config: RunConfig;
}

/** One attempt at a job: what every step of the processor works on. */
interface Attempt extends ResolvedTask {
  deps: TaskProcessorDeps;
  job: Job;
  token: string | undefined;
  jobId: string;
  log: Logger;
  batchId: string | undefined;
  traces: TraceWriter;
  /** BullMQ counts every start of a job (retries, stalled restarts and releases included). */
  firstStart: boolean;
  /** Set when the run parks to start children: the traceparent of each one's call, by call key. */
  childTraceparents?: Record<string, string>;
}

/** What the job kept from earlier attempts. */
interface JobState {
  checkpoint: Awaited<ReturnType<CheckpointStore['load']>>;
  kept: Awaited<ReturnType<OutcomeStore['load']>>;
  published: AgentResult | null;
  /** Traces an earlier attempt parked, written again now. */
  recovered: number;
}

/** The run's record in MySQL: the start it writes (once), and the wait for it before anything irreversible. */
interface Recording {
  startInput(): StartRunInput;
  ensureStarted(): Promise<void>;
  recorded(): Promise<void>;
}

/** Validates the task and resolves its agent and configuration; a task that cannot run ends here, recorded. */
async function resolveTask(
  deps: TaskProcessorDeps,
  finisher: RunFinisher,
  job: Job,
  token: string | undefined,
): Promise<ResolvedTask> {
  const validation = validateTask(job.data);
  if (!validation.ok) {
    const message = `Invalid task: ${formatFieldIssues(validation.issues)}`;
    return finishWithoutRun(
      deps,
      finisher,
      job,
      token,
      { kind: 'input', code: 'invalid_task', message, retryable: false },
      agentNamedBy(job.data, deps.agents),
    );
  }
  const task = validation.task;
  const agentName = task.agent ?? DEFAULT_AGENT;
  const agent = deps.agents.get(agentName);
  if (!agent) {
    const message = `Invalid task: agent: this fleet has no agent "${agentName}" (it has ${[...deps.agents.keys()].join(', ')})`;
    return finishWithoutRun(deps, finisher, job, token, {
      kind: 'input',
      code: 'invalid_task',
      message,
      retryable: false,
    });
  }
  try {
    return { task, agent, config: runConfigFor(task, deps.env, agent) };
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof InputError)) throw error;
    return finishWithoutRun(deps, finisher, job, token, error.toRunError(), agent);
  }
}

function attemptOf(
  deps: TaskProcessorDeps,
  job: Job,
  token: string | undefined,
  resolved: ResolvedTask,
): Attempt {
  const jobId = String(job.id);
  const log = deps.logger.child({ jobId, attempt: job.attemptsMade + 1 });
  const membership = batchMembership(job, deps.env.QUEUE_PREFIX);
  if (membership.claimed)
    log.warn({ batch: membership.claimed }, 'metadata.batch names a batch the job is not a task of: ignored');
  const child = parentMembership(job, resolved.task, deps.env.QUEUE_PREFIX);
  if (child.claimed)
    log.warn({ parent: child.claimed }, 'parent names a job the task is not a child of: ignored');
  // A child agent's task counts against its parent's batch.
  const batchId = membership.batchId ?? child.task.parent?.batchId;
  return {
    ...resolved,
    task: child.task,
    deps,
    job,
    token,
    jobId,
    log,
    batchId,
    traces: new TraceWriter(deps.journal, deps.redis, deps.env.QUEUE_PREFIX, jobId, log),
    firstStart: job.attemptsStarted <= 1,
  };
}

/**
 * The checkpoint, parked traces, kept outcome and published result of earlier attempts. A job started for the
 * first time has none of its own and skips the round trip that reads them; what an earlier job of the same id (a
 * reused idempotency key) may have left is dropped, unread, before this job writes any. Otherwise the reads go
 * together.
 */
async function readJobState(attempt: Attempt): Promise<JobState> {
  const { deps, jobId, traces } = attempt;
  if (attempt.firstStart) {
    // Not waited for: sent before this job parks any trace, on the same connection.
    void forgetJobState(deps.redis, deps.env.QUEUE_PREFIX, jobId).catch(() => undefined);
    return { checkpoint: null, kept: null, published: null, recovered: 0 };
  }
  const [checkpoint, recovered, kept, published] = await Promise.all([
    deps.checkpoints.load(jobId),
    traces.recover(),
    deps.outcomes.load(jobId),
    deps.publisher.published(jobId),
  ]);
  return { checkpoint, kept, published, recovered };
}

/**
 * Delivered again after its result went out (its worker died before BullMQ completed it): nothing more to do but
 * settle a child's hold, which that worker may not have done (settling again changes nothing). Running it again
 * would write its start again, setting its finished record back to `running`.
 */
async function completedAlready(attempt: Attempt, published: AgentResult): Promise<AgentResult> {
  const { deps, jobId, log } = attempt;
  void forgetJobState(deps.redis, deps.env.QUEUE_PREFIX, jobId).catch(() => undefined);
  log.info('result published already: completed as it was');
  await deps.children?.ended(attempt.task, published, log);
  if (published.status === 'failed') throw new UnrecoverableError(published.error?.message ?? 'run failed');
  return published;
}

/**
 * A tenant at its limit: the job goes back to `delayed` for a short while, holding no worker slot, so the jobs of
 * other tenants run meanwhile. A kept outcome's run is over: it needs no slot (the caller does not ask).
 */
async function holdTenantSlot(attempt: Attempt): Promise<HeldSlot | null> {
  const { deps, task, job, jobId, log } = attempt;
  if (task.tenant === undefined || !deps.tenantSlots) return null;
  const slot = await deps.tenantSlots.take(task.tenant, jobId, (err: unknown) =>
    log.warn({ err, tenant: task.tenant }, 'tenant slot not renewed'),
  );
  if (slot) return slot;
  // Every activation counts as started; those that ran nothing are the tenant waits so far.
  const delayMs = tenantWaitMs(Math.max(1, job.attemptsStarted - job.attemptsMade));
  log.debug({ tenant: task.tenant, delayMs }, 'tenant at its concurrency limit: delayed');
  deps.metrics?.observeTenantDelay(task.tenant);
  await job.moveToDelayed(Date.now() + delayMs, attempt.token);
  throw new DelayedError();
}

/**
 * Notes the batch and starts the run's record. Not waited for: the start goes with the next shared INSERT while
 * the run makes its first model call. The run is recorded before it is finished or released; if MySQL stays down,
 * a finished run's outcome waits in Redis for it, and a run that needs it for a side effect fails the attempt,
 * retried from its checkpoint.
 */
async function startRecording(attempt: Attempt, state: JobState): Promise<Recording> {
  const { deps, job, jobId, log, task, agent, config, batchId } = attempt;
  const { checkpoint, kept } = state;
  // A kept outcome's batch was noted when its run started.
  if (batchId && !kept)
    await withRetries(() => deps.batches?.noteTask(batchId) ?? Promise.resolve(), STORE_RETRIES);
  const startedAt = new Date();
  const startInput = (): StartRunInput => ({
    jobId,
    task: config.taskText.slice(0, MAX_TASK_CHARS),
    model: config.model,
    protocol: checkpoint?.protocol ?? config.protocol,
    agent: agent.name,
    tenant: task.tenant ?? null,
    parentJobId: task.parent?.jobId ?? null,
    prices: checkpoint?.price ?? config.price,
    batchId: batchId ?? null,
    metadata: task.metadata,
    attempt: job.attemptsMade + 1,
    startedAt,
  });
  const startRun = () => withRetries(() => deps.journal.start(startInput()), STORE_RETRIES);
  let started = kept?.started ? Promise.resolve() : startRun();
  started.catch(() => undefined); // awaited later; this only keeps an early failure from going unhandled
  // A start that failed (MySQL down) is written again when it is next needed: MySQL may be back by then.
  const ensureStarted = () => (started = started.catch(startRun));
  // A job whose id an earlier job had (a reused idempotency key): that job's effect rows move aside before this
  // one can have any of its own (reused-job-effects.ts), or its first email would find the earlier one `done`.
  const supersede = deps.supersedeEffects;
  const fresh = !checkpoint && !kept && supersede !== undefined && reusableJobId(jobId);
  const moveAside = () =>
    withRetries(() => supersede!(jobId, new Date(job.timestamp)), STORE_RETRIES).then(() => undefined);
  let movedAside = fresh ? moveAside() : Promise.resolve();
  movedAside.catch(() => undefined);
  const ensureMovedAside = () => (movedAside = movedAside.catch(moveAside));
  if (kept) log.info({ tries: kept.recordTries }, 'recording an outcome MySQL could not take earlier');
  else if (checkpoint) log.info({ step: checkpoint.steps }, 'resuming from checkpoint');
  if (state.recovered > 0)
    log.info({ traces: state.recovered }, 'writing again the traces an earlier attempt parked');
  return {
    startInput,
    ensureStarted,
    // Nothing irreversible (an email) happens in a run MySQL has no record of.
    recorded: () =>
      Promise.all([ensureStarted(), ensureMovedAside()]).then(
        () => undefined,
        (error: unknown) => {
          throw new StoreError('store_unavailable', `The run could not be recorded: ${errorText(error)}`, {
            retryable: true,
            cause: error,
          });
        },
      ),
  };
}

/** The kernel's run, wired to the job: its checkpoint, steps, traces, metrics, the fleet's limits. */
async function runTheAgent(
  attempt: Attempt,
  state: JobState,
  recording: Recording,
  signal: AbortSignal | undefined,
): Promise<AgentResult> {
  const { deps, job, jobId, log, task, agent, config, batchId, traces } = attempt;
  // A cancelled run decides nothing: no store read for it.
  const decided = signal?.aborted ? undefined : await decisionsFor(attempt, state);
  const childOutcomes = await deps.children?.outcomesFor(state.checkpoint);
  // Checkpoint, parked trace, progress and log line of a step: one round trip.
  const steps = new StepWrites(deps.redis, job, deps.env.QUEUE_PREFIX, log);
  const runTrace = deps.tracing?.startRun({
    jobId,
    agent: agent.name,
    model: config.model,
    attempt: job.attemptsMade + 1,
    task: config.taskText,
    ...(batchId ? { batchId } : {}),
    ...(task.parent?.traceparent ? { traceparent: task.parent.traceparent } : {}),
  });
  // The waits that ended while the job was parked: a span each, and the decisions counted by outcome.
  if (decided) {
    runTrace?.approvalWaits(decided.decided);
    deps.metrics?.observeApprovalDecisions(decided.decided);
  }
  // The calls of the children it waited on: a span each, from the launch to now, unless recorded at the launch.
  if (runTrace && childOutcomes && traceContinues(job))
    runTrace.childCallsReturned(returnedCalls(state.checkpoint, childOutcomes));
  // Notes across tasks (docs/notes.md): a new run opens with its agent's notes; every run may look up more.
  const notes =
    config.notes && deps.notes
      ? deps.notes.session(notesOwner(agent, task), config.notes, config.taskText, config.model, log)
      : null;
  const gate = deps.gateFor?.({ batchId, tenant: task.tenant, model: config.model, hold: task.parent?.hold });
  const budget = withinParentTime(config.budget, task.parent?.deadlineAt);
  const openedAt = Date.now();
  // The opening recall's embedding (with NOTES_EMBEDDING_MODEL) is the run's first paid call: the kernel is handed it.
  const recall =
    notes && !state.checkpoint
      ? await notes.opening(log, {
          budget,
          gate,
          signal,
          timeLeftMs: () => budget.deadlineMs - (Date.now() - openedAt),
        })
      : undefined;
  const opened = recall !== undefined || (state.checkpoint?.recalled?.length ?? 0) > 0;
  const own = notes?.tools(opened) ?? [];
  const stepTraces: StepTrace[] = [];
  const registry = deps.tools.registryFor(config.tools);
  const result = await runAgent({
    runId: jobId,
    task: config.taskText,
    ...(config.instructions ? { instructions: config.instructions } : {}),
    ...(agent.output ? { output: agent.output } : {}),
    model: deps.createModel(config.model, config.api),
    price: config.price,
    tools: own.length > 0 ? registry.with(...own) : registry,
    ...(recall ? { recall } : {}),
    ...(notes?.openingEmbeddings ? { embeddings: notes.openingEmbeddings } : {}),
    // The opening recall's time is the run's: a new run's deadline counts from before it.
    startedAt: openedAt,
    budget,
    protocol: config.protocol,
    options: config.options,
    checkpoint: state.checkpoint ?? undefined,
    signal,
    gate,
    approvals: { policy: config.approval.policy, ...(decided ? { decisions: decided.decisions } : {}) },
    children: {
      allowed: deps.children !== undefined && (task.parent?.depth ?? 0) < deps.env.AGENT_MAX_DEPTH,
      maxDepth: deps.env.AGENT_MAX_DEPTH,
      ...(childOutcomes ? { results: childOutcomes } : {}),
    },
    ...(runTrace ? { observer: runTrace } : {}),
    logger: log,
    onStep: (trace) => {
      steps.step(trace);
      traces.add(trace);
      if (notes) stepTraces.push(trace);
      deps.metrics?.observeStep(trace);
      log.info({ step: trace.step, kind: trace.kind, costUsd: trace.totals.costUsd }, 'step');
    },
    onCheckpoint: (checkpoint) => steps.checkpoint(checkpoint.json),
    beforeSideEffects: recording.recorded,
  }).catch((error: unknown) => {
    runTrace?.fail(error);
    throw error;
  });
  runTrace?.end(result);
  if (runTrace && result.stopReason === 'awaiting_children' && result.awaitingChildren)
    attempt.childTraceparents = runTrace.childCallsLaunched(
      launchedCalls(result.awaitingChildren),
      traceContinues(job),
    );
  await steps.settled();
  if (notes && !parked(result, signal)) {
    const keepsFacts = (tool: string) => keptAsFacts(registry.get(tool));
    // The notes it leaves are embedded while what is left of its budget pays (their cost joins its usage).
    const given = state.checkpoint?.budget ?? budget;
    await notes.close({ jobId, traces: stepTraces, result, keepsFacts }, log, {
      budget: given,
      gate,
      signal,
      timeLeftMs: () => CLOSE_EMBEDDING_WAIT_MS,
    });
  }
  return result;
}

/** How long the embeddings of a run's notes may take after it ended, all told (waits at the fleet's gate included). */
const CLOSE_EMBEDDING_WAIT_MS = 5_000;

/** A run that stops to resume later (a decision, its children, a shutdown): not its end. */
function parked(result: AgentResult, signal: AbortSignal | undefined): boolean {
  return (
    result.stopReason === 'awaiting_approval' ||
    result.stopReason === 'awaiting_children' ||
    (result.stopReason === 'cancelled' && signal?.reason === SHUTDOWN_REASON)
  );
}

/**
 * Released on shutdown, retried, or final. A final outcome's record goes in before its result goes out; if MySQL
 * is down, the outcome waits in Redis and the job comes back later (a delay, not a failed attempt: an outage of
 * any length short of the keys' expiry loses nothing).
 */
async function endAttempt(
  attempt: Attempt,
  finisher: RunFinisher,
  state: JobState,
  recording: Recording,
  result: AgentResult,
  signal: AbortSignal | undefined,
): Promise<AgentResult> {
  const { deps, job, token, log, traces } = attempt;
  const { kept } = state;
  if (result.stopReason === 'cancelled' && signal?.reason === SHUTDOWN_REASON) {
    await Promise.all([recording.ensureStarted(), traces.flush()]);
    // Released, not ended: the checkpoint carries the run to whichever worker takes the job next.
    log.info({ step: result.steps }, 'released on shutdown');
    await job.moveToWait(token);
    throw new WaitingError();
  }
  if (result.stopReason === 'awaiting_approval' && result.awaitingApproval && deps.approvals) {
    await Promise.all([recording.ensureStarted(), traces.flush()]);
    return deps.approvals.park(
      job,
      token,
      {
        jobId: attempt.jobId,
        batchId: attempt.batchId ?? null,
        tenant: attempt.task.tenant ?? null,
        agent: attempt.agent.name,
        instance: String(job.timestamp),
        awaiting: result.awaitingApproval,
        tools: deps.tools.registryFor(attempt.config.tools),
        timeoutMs: attempt.config.approval.timeoutMs,
      },
      log,
    );
  }
  if (result.stopReason === 'awaiting_approval') result = noApprovalStore(result);
  if (result.stopReason === 'awaiting_children' && result.awaitingChildren && deps.children) {
    await Promise.all([recording.ensureStarted(), traces.flush()]);
    return deps.children.launch(
      job,
      token,
      {
        awaiting: result.awaitingChildren,
        parent: attempt.task,
        batchId: attempt.batchId,
        approval: attempt.config.approval,
        ...(attempt.childTraceparents ? { traceparents: attempt.childTraceparents } : {}),
      },
      log,
    );
  }
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (!kept && result.status === 'failed' && result.error?.retryable && !lastAttempt) {
    log.warn({ error: result.error }, 'run failed, will be retried');
    await Promise.all([recording.ensureStarted(), traces.flush()]);
    throw new Error(result.error.message);
  }
  if (attempt.task.parent) result = withChildStopDetail(result);
  const finished = await finisher.finish({
    result,
    start: recording.startInput(),
    started: recording.ensureStarted,
    traces,
    recordTries: kept?.recordTries ?? 0,
    recheck: !attempt.firstStart,
    whileDown: 'redeliver',
  });
  if (finished.kept) await delayForRecord(deps.env, finished, log, job, token);
  log.info({ status: result.status, stopReason: result.stopReason, usage: result.usage }, 'run finished');
  await deps.children?.ended(attempt.task, result, log);
  if (result.status === 'failed') throw new UnrecoverableError(result.error?.message ?? 'run failed');
  return result;
}

/**
 * The decisions a parked run resumes with. MySQL down: the job waits, delayed (no attempt spent), and asks again
 * on its next delivery; it never runs a call that waits without its decision.
 */
async function decisionsFor(
  attempt: Attempt,
  state: JobState,
): Promise<Awaited<ReturnType<ApprovalParking['decisionsFor']>>> {
  const { deps, job, token, log } = attempt;
  try {
    return await deps.approvals?.decisionsFor(job, state.checkpoint);
  } catch (err) {
    const delayMs = deps.env.WORKER_RETRY_BASE_MS;
    log.warn({ err, retryInMs: delayMs }, 'decisions could not be read: resuming later');
    await job.moveToDelayed(Date.now() + delayMs, token);
    throw new DelayedError();
  }
}

/** A run that asked for approval on a worker given no approval store: ended, saying so. */
function noApprovalStore(result: AgentResult): AgentResult {
  const { awaitingApproval: _awaiting, ...rest } = result;
  return {
    ...rest,
    status: 'failed',
    stopReason: 'error',
    error: {
      kind: 'config',
      code: 'approvals_unavailable',
      message: 'a call needs approval, but this worker has no approval store',
      retryable: false,
    },
  };
}

/** MySQL is down: the job waits, delayed (no attempt spent), and its next delivery records the kept outcome. */
async function delayForRecord(
  env: Env,
  finished: Extract<Finished, { kept: true }>,
  log: Logger,
  job: Job,
  token: string | undefined,
): Promise<never> {
  const delayMs = retryDelayMs(
    { baseMs: env.WORKER_RETRY_BASE_MS, maxMs: env.WORKER_RETRY_MAX_MS },
    finished.recordTries,
  );
  log.warn({ err: finished.error, retryInMs: delayMs }, 'run finished but MySQL is unreachable: record kept');
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}

/**
 * A job that ends before any run starts (a bad task, an unknown model) still gets its record and result; that of
 * an agent with an output schema carries `output: null`, as every result of such an agent does.
 */
async function finishWithoutRun(
  deps: TaskProcessorDeps,
  finisher: RunFinisher,
  job: Job,
  token: string | undefined,
  error: RunError,
  agent?: AgentDefinition,
): Promise<never> {
  const log = deps.logger.child({ jobId: String(job.id), attempt: job.attemptsMade + 1 });
  const result = failedResult(String(job.id), error, agent);
  // A job delivered again for its record (MySQL was down) has its tries kept: they space the next delivery.
  const kept = job.attemptsStarted > 1 ? await deps.outcomes.load(result.jobId) : null;
  const data = (job.data ?? {}) as { task?: unknown };
  const start: StartRunInput = {
    jobId: result.jobId,
    task: typeof data.task === 'string' ? data.task.slice(0, MAX_TASK_CHARS) : '',
    model: deps.env.LLM_MODEL,
    protocol: deps.env.AGENT_PROTOCOL,
    agent: agent?.name ?? null,
    attempt: job.attemptsMade + 1,
  };
  const finished = await finisher.finish({
    result,
    start,
    started: () => withRetries(() => deps.journal.start(start), STORE_RETRIES),
    recordTries: kept?.recordTries ?? 0,
    recheck: job.attemptsStarted > 1,
    whileDown: 'redeliver',
  });
  if (finished.kept) await delayForRecord(deps.env, finished, log, job, token);
  // A child the worker refused before its run (its agent's model has no price, a blank task from its parent's
  // model) spent nothing: its hold is given back now, not left to expire as spent at its worst case.
  await deps.children?.ended(heldChildTask(job, deps.env.QUEUE_PREFIX), result, log);
  throw new UnrecoverableError(error.message);
}

/**
 * The `parent` of a job's data, which may break the task's schema, when the job really is the fleet's child of that
 * parent (parentMembership): only then is its hold the fleet's to settle. Null otherwise.
 */
export function heldChildTask(job: Pick<Job, 'data' | 'parent'>, prefix: string): AgentTask | null {
  const parent = (job.data as { parent?: unknown } | null | undefined)?.parent;
  if (typeof parent !== 'object' || parent === null) return null;
  const { jobId, hold } = parent as { jobId?: unknown; hold?: unknown };
  if (typeof jobId !== 'string' || typeof hold !== 'string') return null;
  const claimed = { parent: { jobId, hold } };
  return parentMembership(job, claimed, prefix).task.parent ? (claimed as unknown as AgentTask) : null;
}

/** `agent`: the agent the job names, when the fleet has it (its output schema decides whether `output` is there). */
export function failedResult(jobId: string, error: RunError, agent?: AgentDefinition): AgentResult {
  const result: AgentResult = {
    jobId,
    status: 'failed',
    stopReason: 'error',
    answer: null,
    steps: 0,
    toolCalls: 0,
    usage: usageOf({ promptTokens: 0, completionTokens: 0 }, { inputPerMillion: 0, outputPerMillion: 0 }),
    error,
  };
  if (agent?.output) result.output = null;
  return result;
}

/** The fleet's agent a job's data names (`default` without `agent`), read from data that may break the schema. */
export function agentNamedBy(
  data: unknown,
  agents: ReadonlyMap<string, AgentDefinition>,
): AgentDefinition | undefined {
  const named = (data as { agent?: unknown } | null | undefined)?.agent ?? DEFAULT_AGENT;
  return typeof named === 'string' ? agents.get(named) : undefined;
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * A child agent's deadline, cut to its parent's share of time (absolute): time it waited in the queue counts. Read
 * at its first start; a resumed run keeps the budget of its checkpoint.
 */
function withinParentTime(budget: Budget, deadlineAt: number | undefined): Budget {
  if (deadlineAt === undefined) return budget;
  return { ...budget, deadlineMs: Math.max(1_000, Math.min(budget.deadlineMs, deadlineAt - Date.now())) };
}
