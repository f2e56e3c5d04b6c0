// Prometheus metrics of the fleet: what the agents do (jobs, steps, tokens, cost, model and tool latency,
// tool errors), how long their writes to the store take and how deep the queues are. Each instance owns its
// registry, so tests and several instances in one process never collide, and nothing is registered on
// prom-client's global registry.
//
// Label values are bounded: tool names come from the model, so only known tools are labelled by name
// (the rest are `other`); tool error codes, step kinds, outcomes and stop reasons likewise. Tenants and models
// have no fixed list: the first 100 distinct values seen keep their label, the rest are `other`.
//
// Queue depths are read on scrape, from BullMQ, with a short timeout: a slow or unreachable Redis never
// hangs a scrape; the last values read are kept and agentfleet_scrape_errors_total counts the failure. Pending
// approvals are read from the store the same way (approval-metrics.ts).
import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  STOP_REASONS,
  type AgentResult,
  type RunStatus,
  type StepTrace,
  type StopReason,
  type TraceKind,
} from '../kernel/types.js';
import type { RateWaitReason } from '../fleet/rate-limiter.js';
import { TOOL_NAMES } from '../queue/tool-names.js';
import { withTimeout } from '../util/with-timeout.js';
import type { SweptTable } from '../store/retention/store-sweep.js';
import { DEFAULT_MAX_LABEL_VALUES, FirstSeenLabels } from './bounded-labels.js';
import { ApprovalMetrics, type PendingApprovalsSource } from './approval-metrics.js';

export const METRIC_PREFIX = 'agentfleet_';

/** The label value of anything outside a known set. */
export const OTHER = 'other';

/**
 * Tool error codes worth their own label value: those of the tool runner (run-tool-call.ts) and of the
 * fleet's tools. Any other code is counted as `other`.
 */
export const KNOWN_TOOL_ERROR_CODES: readonly string[] = [
  // The runner, whatever the tool.
  'unknown_tool',
  'invalid_arguments',
  'timeout',
  'aborted',
  'tool_failed',
  'transient',
  // ctx.once, whatever the tool (effect-once.ts).
  'effect_cap_reached',
  'effect_ledger_unavailable',
  // sql_query, list_tables, describe_table.
  'sql_refused',
  'sql_error',
  'sql_failed',
  'query_timeout',
  'unknown_table',
  'data_db_unavailable',
  'data_db_access',
  // send_email.
  'email_recipient_refused',
  'email_subject_refused',
  'email_body_refused',
  'email_cap_reached',
  'email_smtp_refused',
  'email_smtp_unavailable',
  'email_ledger_unavailable',
];

/** Model calls last from a fraction of a second to a minute (the model timeout). */
export const MODEL_CALL_BUCKETS_SECONDS: readonly number[] = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60];
/** Tool calls: a fast query in milliseconds, a slow one or an email in seconds. */
export const TOOL_CALL_BUCKETS_SECONDS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** A call's wait for a rate limit: none to a minute (a full window), rarely more (a long pause after a 429). */
export const RATE_WAIT_BUCKETS_SECONDS: readonly number[] = [
  0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/**
 * A run journal query (run starts, steps and finishes of every job in flight, src/worker/run-journal.ts): a
 * millisecond or two on an idle store, a second when it is in trouble; fine enough for a p99 in between.
 */
export const STORE_WRITE_BUCKETS_SECONDS: readonly number[] = [
  0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2.5,
];

const WAIT_REASONS: ReadonlySet<string> = new Set<RateWaitReason>(['rpm', 'tpm', 'pause']);

/** Why the fleet was paused: the endpoint answered 429, or its x-ratelimit headers said its limits were near. */
export type PauseCause = 'status_429' | 'headers';

/**
 * The BullMQ states read for agentfleet_queue_jobs, as getJobCounts names them (and as the `state` label
 * shows them): `waiting` is BullMQ's wait list.
 */
export const QUEUE_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'completed',
  'failed',
] as const;

export const DEFAULT_QUEUE_TIMEOUT_MS = 500;

const OUTCOMES: ReadonlySet<string> = new Set<RunStatus>(['succeeded', 'stopped', 'failed']);
const STOP_REASON_LABELS: ReadonlySet<string> = new Set<StopReason>(STOP_REASONS);
const STEP_KINDS: ReadonlySet<string> = new Set<TraceKind>(['action', 'answer', 'invalid', 'final']);

/** What the queue gauge needs of a BullMQ Queue (a real Queue fits). */
export type WatchedQueue = Pick<Queue, 'name' | 'getJobCounts'>;

export interface FleetMetricsOptions {
  /** Tool names labelled as themselves; any other is `other`. Default: the fleet's tools (TOOL_NAMES). */
  knownTools?: Iterable<string>;
  /** Tool error codes labelled as themselves; any other is `other`. Default: KNOWN_TOOL_ERROR_CODES. */
  knownErrorCodes?: Iterable<string>;
  /** Process metrics (CPU, memory, event loop, GC…) prefixed agentfleet_. Default: true. */
  defaultMetrics?: boolean;
  /** How long a scrape waits for each queue's counts before keeping the last ones. Default: 500 ms. */
  queueTimeoutMs?: number;
  /** Distinct tenants, and models, labelled as themselves; later ones are `other`. Default: 100. */
  maxLabelValues?: number;
  /** How long a scrape waits for the pending approvals before keeping the last values. Default: 500 ms. */
  approvalsTimeoutMs?: number;
}

type Counts = Record<string, number>;

export class FleetMetrics {
  readonly registry: Registry;
  private readonly knownTools: Set<string>;
  private readonly knownErrorCodes: ReadonlySet<string>;
  private readonly queueTimeoutMs: number;
  private readonly queues: WatchedQueue[] = [];
  /** At most one count request per queue: a scrape that times out leaves it running for the next one. */
  private readonly inflight = new Map<WatchedQueue, Promise<Counts>>();
  private refreshing: Promise<void> | undefined;

  private readonly jobs: Counter<'outcome' | 'stop_reason'>;
  private readonly steps: Counter<'kind'>;
  private readonly tokens: Counter<'type'>;
  private readonly tokenDetails: Counter<'type'>;
  private readonly cost: Counter;
  private readonly modelCallDuration: Histogram;
  private readonly toolCallDuration: Histogram<'tool'>;
  private readonly toolErrors: Counter<'tool' | 'code'>;
  private readonly queueJobs: Gauge<'queue' | 'state'>;
  private readonly scrapeErrors: Counter<'queue'>;
  private readonly emailSettlements: Counter<'outcome'>;
  private readonly storeRowsDeleted: Counter<'table'>;
  private readonly storeWriteDuration: Histogram;
  private readonly uncertainEffects: Counter;
  private readonly catalogsServed: Gauge;
  private readonly tenantDelays: Counter<'tenant'>;
  private readonly rateWaits: Histogram<'model' | 'reason'>;
  private readonly ratePauses: Counter<'model' | 'cause'>;
  private readonly tenantLabels: FirstSeenLabels;
  private readonly modelLabels: FirstSeenLabels;
  private readonly approvals: ApprovalMetrics;

  constructor(options: FleetMetricsOptions = {}) {
    this.registry = new Registry();
    this.knownTools = new Set(options.knownTools ?? TOOL_NAMES);
    this.knownErrorCodes = new Set(options.knownErrorCodes ?? KNOWN_TOOL_ERROR_CODES);
    this.queueTimeoutMs = options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS;
    if (options.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    }
    const registers = [this.registry];

    this.jobs = new Counter({
      name: `${METRIC_PREFIX}jobs_total`,
      help: 'Agent jobs finished (result published), by outcome and stop reason.',
      labelNames: ['outcome', 'stop_reason'] as const,
      registers,
    });
    this.steps = new Counter({
      name: `${METRIC_PREFIX}steps_total`,
      help: 'Agent steps, by kind.',
      labelNames: ['kind'] as const,
      registers,
    });
    this.tokens = new Counter({
      name: `${METRIC_PREFIX}tokens_total`,
      help: 'Model tokens used by agent steps (retries and memory summaries included), by type.',
      labelNames: ['type'] as const,
      registers,
    });
    // Separate from tokens_total: these are parts of its counts, and a sum over its types must stay the total.
    this.tokenDetails = new Counter({
      name: `${METRIC_PREFIX}token_details_total`,
      help: 'Parts of tokens_total: prompt tokens served from the cache (cached_prompt), completion tokens spent reasoning (reasoning).',
      labelNames: ['type'] as const,
      registers,
    });
    this.cost = new Counter({
      name: `${METRIC_PREFIX}cost_usd_total`,
      help: 'Model cost of agent steps, in US dollars.',
      registers,
    });
    this.modelCallDuration = new Histogram({
      name: `${METRIC_PREFIX}model_call_duration_seconds`,
      help: "Model call duration: each step's model time spread evenly over the step's model calls.",
      buckets: [...MODEL_CALL_BUCKETS_SECONDS],
      registers,
    });
    this.toolCallDuration = new Histogram({
      name: `${METRIC_PREFIX}tool_call_duration_seconds`,
      help: 'Tool call duration, by tool (unknown tools as "other").',
      labelNames: ['tool'] as const,
      buckets: [...TOOL_CALL_BUCKETS_SECONDS],
      registers,
    });
    this.toolErrors = new Counter({
      name: `${METRIC_PREFIX}tool_errors_total`,
      help: 'Failed tool calls, by tool and error code (unknown ones as "other").',
      labelNames: ['tool', 'code'] as const,
      registers,
    });
    this.queueJobs = new Gauge({
      name: `${METRIC_PREFIX}queue_jobs`,
      help: 'Jobs in each BullMQ queue, by state, read on scrape.',
      labelNames: ['queue', 'state'] as const,
      registers,
      // Arrow functions: prom-client calls collect with the metric as `this`.
      collect: () => this.refreshQueues(),
    });
    this.scrapeErrors = new Counter({
      name: `${METRIC_PREFIX}scrape_errors_total`,
      help: 'Queue counts that could not be read in time during a scrape (the last values were kept).',
      labelNames: ['queue'] as const,
      registers,
      // Also waits for the scrape's queue reads, whatever order prom-client collects in, so an error
      // shows in the scrape that met it.
      collect: () => this.refreshQueues(),
    });
    this.emailSettlements = new Counter({
      name: `${METRIC_PREFIX}email_settlements_total`,
      help: 'Emails left pending by a stopped attempt, settled later by the sweeper: sent, not_delivered or uncertain.',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.storeRowsDeleted = new Counter({
      name: `${METRIC_PREFIX}store_rows_deleted_total`,
      help: 'Rows the store sweeper deleted past STORE_KEEP_STEPS_DAYS and STORE_KEEP_RUNS_DAYS, by table.',
      labelNames: ['table'] as const,
      registers,
    });
    this.storeWriteDuration = new Histogram({
      name: `${METRIC_PREFIX}store_write_seconds`,
      help: "Duration of the run journal's MySQL queries (run starts, steps and finishes of the jobs in flight, one query per flush), failed ones included.",
      buckets: [...STORE_WRITE_BUCKETS_SECONDS],
      registers,
    });
    this.uncertainEffects = new Counter({
      name: `${METRIC_PREFIX}uncertain_effects_total`,
      help: 'Side effects (emails) whose outcome was unknown when their job published its result.',
      registers,
    });
    this.catalogsServed = new Gauge({
      name: `${METRIC_PREFIX}catalogs_served`,
      help: 'Distinct agent catalogs the live workers of the fleet serve, as this worker last saw them: more than 1 means workers disagree.',
      registers,
    });
    const maxLabels = options.maxLabelValues ?? DEFAULT_MAX_LABEL_VALUES;
    this.tenantLabels = new FirstSeenLabels(OTHER, maxLabels);
    this.modelLabels = new FirstSeenLabels(OTHER, maxLabels);
    this.tenantDelays = new Counter({
      name: `${METRIC_PREFIX}tenant_delays_total`,
      help: 'Jobs put back in delayed because their tenant was at TENANT_CONCURRENCY, by tenant (past the first 100 tenants, "other").',
      labelNames: ['tenant'] as const,
      registers,
    });
    this.rateWaits = new Histogram({
      name: `${METRIC_PREFIX}model_call_wait_seconds`,
      help: "Model calls that waited before going out, and how long: for MODEL_RPM (rpm), MODEL_TPM (tpm) or the fleet's pause after a 429 or asked by x-ratelimit headers (pause), by model.",
      labelNames: ['model', 'reason'] as const,
      buckets: [...RATE_WAIT_BUCKETS_SECONDS],
      registers,
    });
    this.ratePauses = new Counter({
      name: `${METRIC_PREFIX}rate_limit_pauses_total`,
      help: 'Fleet-wide pauses this worker set, by model and cause: the endpoint answered 429 (status_429) or its x-ratelimit headers said its limits were nearly used (headers).',
      labelNames: ['model', 'cause'] as const,
      registers,
    });
    this.approvals = new ApprovalMetrics(this.registry, METRIC_PREFIX, options.approvalsTimeoutMs);
  }

  /** Labels these tools as themselves too: the fleet configuration's, known once it is open. */
  knowTools(names: Iterable<string>): void {
    for (const name of names) this.knownTools.add(name);
  }

  /** The distinct catalogs (content hashes) live workers serve. */
  observeCatalogs(count: number): void {
    this.catalogsServed.set(count);
  }

  /** The Content-Type of metrics(): the Prometheus text format. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Call on every step trace (the kernel's onStep). Tokens and cost are counted here, step by step. */
  observeStep(trace: StepTrace): void {
    this.steps.inc({ kind: bounded(trace.kind, STEP_KINDS) });
    this.tokens.inc({ type: 'prompt' }, nonNegative(trace.promptTokens));
    this.tokens.inc({ type: 'completion' }, nonNegative(trace.completionTokens));
    if (trace.cachedPromptTokens)
      this.tokenDetails.inc({ type: 'cached_prompt' }, nonNegative(trace.cachedPromptTokens));
    if (trace.reasoningTokens)
      this.tokenDetails.inc({ type: 'reasoning' }, nonNegative(trace.reasoningTokens));
    this.cost.inc(nonNegative(trace.costUsd));

    const modelSeconds = nonNegative(trace.modelLatencyMs) / 1000;
    const calls = Math.floor(nonNegative(trace.modelCalls));
    if (calls > 0) {
      // Retries and memory summaries make several calls per step: count each, so that sum / count is the
      // mean call duration.
      for (let i = 0; i < calls; i++) this.modelCallDuration.observe(modelSeconds / calls);
    } else if (modelSeconds > 0) {
      this.modelCallDuration.observe(modelSeconds);
    }

    for (const action of trace.actions) {
      const tool = this.toolLabel(action.tool);
      this.toolCallDuration.observe({ tool }, nonNegative(action.latencyMs) / 1000);
      if (!action.ok) this.toolErrors.inc({ tool, code: this.errorCodeLabel(action.errorCode) });
    }
  }

  /** Call once per finished job, when its result is published. */
  observeResult(result: AgentResult): void {
    this.jobs.inc({
      outcome: bounded(result.status, OUTCOMES),
      stop_reason: bounded(result.stopReason, STOP_REASON_LABELS),
    });
    if (result.uncertainEffects?.length) this.uncertainEffects.inc(result.uncertainEffects.length);
  }

  /** Call for each pending email the effect sweeper settles (effect-sweeper.ts, send_email's onSwept). */
  observeEmailSettlement(outcome: 'sent' | 'not_delivered' | 'uncertain'): void {
    this.emailSettlements.inc({ outcome });
  }

  /** Call with the rows each statement of the store sweeper deleted (src/worker/store-sweeper.ts). */
  observeStoreRowsDeleted(table: SweptTable, rows: number): void {
    this.storeRowsDeleted.inc({ table }, rows);
  }

  /** Call with the duration of each run journal query, in milliseconds (RunJournal's onWrite). */
  observeStoreWrite(ms: number): void {
    this.storeWriteDuration.observe(nonNegative(ms) / 1000);
  }

  /** Call when a job is put back in delayed because its tenant is at TENANT_CONCURRENCY. */
  observeTenantDelay(tenant: string): void {
    this.tenantDelays.inc({ tenant: this.tenantLabels.label(tenant) });
  }

  /** Call when a model call waited for a rate limit before going out (FleetGate's onWaited). */
  observeRateWait(model: string, reason: RateWaitReason, ms: number): void {
    this.rateWaits.observe(
      { model: this.modelLabels.label(model), reason: bounded(reason, WAIT_REASONS) },
      nonNegative(ms) / 1000,
    );
  }

  /** Call when this worker pauses the fleet: after a 429, or because the endpoint's headers asked for it. */
  observeRatePause(model: string, cause: PauseCause): void {
    this.ratePauses.inc({ model: this.modelLabels.label(model), cause });
  }

  /** Reports the fleet's pending approvals on every scrape (ApprovalStore fits). Once per instance. */
  watchApprovals(source: PendingApprovalsSource): void {
    this.approvals.watch(source);
  }

  /** Call when a resumed run is given its decisions: each decided approval counted by its outcome. */
  observeApprovalDecisions(decided: readonly { state: string }[]): void {
    this.approvals.observeDecisions(decided);
  }

  /** Reports these queues' job counts on every scrape. The caller keeps ownership (and closes them). */
  watchQueues(queues: readonly WatchedQueue[]): void {
    for (const queue of queues) {
      if (this.queues.includes(queue)) continue;
      this.queues.push(queue);
      // Present from the first scrape, so rate() and alerts see the series before any error.
      this.scrapeErrors.inc({ queue: queue.name }, 0);
    }
  }

  /** Every metric in the Prometheus text format; never rejects because of a queue. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The label of a tool name: itself when known, else `other`. */
  toolLabel(tool: string): string {
    return this.knownTools.has(tool) ? tool : OTHER;
  }

  /** The label of a tool error code: itself when known, else `other` (a missing code too). */
  errorCodeLabel(code: string | null | undefined): string {
    return code != null && this.knownErrorCodes.has(code) ? code : OTHER;
  }

  /** Reads every watched queue once per scrape, however many metrics wait for it. */
  private refreshQueues(): Promise<void> {
    this.refreshing ??= Promise.all(this.queues.map((queue) => this.collectQueue(queue)))
      .catch(() => undefined)
      .then(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private async collectQueue(queue: WatchedQueue): Promise<void> {
    let counts: Counts;
    try {
      counts = await withTimeout(this.countsOf(queue), this.queueTimeoutMs);
    } catch {
      this.scrapeErrors.inc({ queue: queue.name });
      return;
    }
    for (const state of QUEUE_STATES) {
      this.queueJobs.set({ queue: queue.name, state }, counts[state] ?? 0);
    }
  }

  private countsOf(queue: WatchedQueue): Promise<Counts> {
    let pending = this.inflight.get(queue);
    if (!pending) {
      const request = queue.getJobCounts(...QUEUE_STATES).finally(() => this.inflight.delete(queue));
      // A request outliving its scrape may still fail: that failure is already counted.
      request.catch(() => undefined);
      this.inflight.set(queue, request);
      pending = request;
    }
    return pending;
  }
}

function bounded(value: string, known: ReadonlySet<string>): string {
  return known.has(value) ? value : OTHER;
}

/** Counters only go up; a missing or bad number counts as nothing. */
function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
