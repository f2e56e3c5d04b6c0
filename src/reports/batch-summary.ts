// The batch report's data, computed from the batch row and the runs of its tasks with no I/O.
//
// The tasks of a batch are its job ids, in enqueue order. A task whose run has finished (succeeded, stopped or
// failed) counts in the summary with the usage of its result; a task still running or with no run row yet is
// shown but counted in none of succeeded/stopped/failed nor in the usage, so the summary stays "the sum over its
// tasks' results". The batch is completed only when every task has a finished run.
// The sums are the batch tally's (src/batch/batch-summary.ts): exact, whatever the order of the runs.
import type { StopReason } from '../kernel/types.js';
import { BatchTally, type BatchSummary } from '../batch/batch-summary.js';
import type { RunRowStatus } from '../store/rows.js';
import { forecastAgainstActual, type ForecastReport } from './forecast-report.js';
import { tenantTotals, type TenantTotals } from './tenant-totals.js';
import { approvalTotals, type ApprovalsReport } from './approval-totals.js';
import type { Approval } from '../approvals/approval.js';
import type { BatchRunInput } from './batch-run-input.js';
import { calledRunsByTask, type CalledRuns } from './called-runs.js';

export type { BatchRunInput } from './batch-run-input.js';

/** The batch summary, key for key: the one the batch aggregator stores, computed here from the runs. */
export type { BatchSummary };
export type BatchUsage = BatchSummary['usage'];

/** A row of agent_batches. */
export interface BatchRecord {
  batchId: string;
  name: string | null;
  /** The `tasks` column; the job ids are what the report goes by. */
  tasks: number;
  jobIds: readonly string[];
  maxCostUsd: number | null;
  maxTokens: number | null;
  /** The `state` column as the batch service left it; the report computes its own. */
  state: string;
  /** The `summary` column (filled by the batch service at completion), checked against the runs. */
  summary: unknown;
  createdAt: Date;
  completedAt: Date | null;
  /** The `forecast` column (migration 010): the forecast it was enqueued with, or null. */
  forecast?: unknown;
}

/**
 * An email of a task not known to have been delivered, as the effect ledger's send_email rows have it when the report is made:
 * `uncertain` (nothing could tell), `not_delivered` (a later check found it never arrived, and the run was
 * over), or `pending` (an attempt holds it, or stopped and the sweeper has not looked yet).
 */
export interface EmailDoubt {
  jobId: string;
  callKey: string;
  recipient: string;
  messageId: string;
  state: 'uncertain' | 'not_delivered' | 'pending';
  note: string | null;
}

export type TaskState = RunRowStatus | 'pending';
export type BatchState = 'running' | 'completed';

/** One task of the report. Result fields are null until the task's run has finished. */
export interface TaskReportRow {
  /** 1-based position in the batch. */
  index: number;
  jobId: string;
  /** Null while the task has no run row (the task text lives in the run). */
  task: string | null;
  status: TaskState;
  finished: boolean;
  stopReason: StopReason | null;
  steps: number | null;
  toolCalls: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  totalTokens: number | null;
  costUsd: number | null;
  answer: string | null;
  /** The error message of a failed run. */
  error: string | null;
  /** Why a budget stopped the run, when one did. */
  stopDetail?: string;
  /** The run's structured output, when its agent has an output schema (null: it ended without one). */
  output?: unknown;
  /** The runs its agent called (child agents, theirs in turn): listed, their usage already in this row's. */
  called?: CalledRuns;
}

export interface BatchReport {
  batchId: string;
  name: string | null;
  state: BatchState;
  createdAt: Date;
  completedAt: Date | null;
  generatedAt: Date;
  budget: { maxCostUsd: number | null; maxTokens: number | null };
  summary: BatchSummary;
  /** Tasks whose run is still going, and tasks with no run row yet; neither is in the summary's counts. */
  running: number;
  pending: number;
  rows: TaskReportRow[];
  /** Inconsistencies between the batch row and its runs, in plain sentences. */
  warnings: string[];
  /** Emails of the batch's tasks not known to have been delivered, in task order (1-based `index`). */
  emails: (EmailDoubt & { index: number })[];
  /** The forecast it was enqueued with against what it cost; null when it has none. */
  forecast: ForecastReport | null;
  /** Per tenant, when some task of the batch has one: its finished tasks, tokens and cost. Empty otherwise. */
  tenants: TenantTotals[];
  /** The calls of the batch's tasks that waited for a person: counts by state and a row each (total 0: none). */
  approvals: ApprovalsReport;
}

export interface BuildReportOptions {
  /** When the report was made; defaults to now. */
  generatedAt?: Date;
  /** send_email's doubtful rows (of the effect ledger) for the batch's jobs; none when absent. */
  emails?: readonly EmailDoubt[];
  /** The batch's approvals (ApprovalStore.forBatch), in any state; none when absent. */
  approvals?: readonly Approval[];
}

export function buildBatchReport(
  batch: BatchRecord,
  runs: readonly BatchRunInput[],
  options: BuildReportOptions = {},
): BatchReport {
  const warnings: string[] = [];
  const jobIds = uniqueJobIds(batch.jobIds, warnings);
  if (batch.tasks !== jobIds.length) {
    warnings.push(
      `the batch row says ${batch.tasks} tasks but lists ${jobIds.length} job ids; the report lists the job ids`,
    );
  }
  const listed = new Set(jobIds);
  const runsByJob = new Map<string, BatchRunInput>();
  const unlisted: string[] = [];
  for (const run of runs) {
    // A child agent's run carries its parent's batch; the parent's usage covers it (docs/child-agents.md).
    if (run.parentJobId && !listed.has(run.jobId)) continue;
    if (!listed.has(run.jobId)) unlisted.push(run.jobId);
    else runsByJob.set(run.jobId, run);
  }
  if (unlisted.length > 0) {
    warnings.push(
      `${unlisted.length} run(s) name this batch but are not among its job ids and are not counted: ${unlisted.slice(0, 10).join(', ')}${unlisted.length > 10 ? ', …' : ''}`,
    );
  }

  const tally = new BatchTally();
  let running = 0;
  let pending = 0;
  const rows = jobIds.map((jobId, i): TaskReportRow => {
    const run = runsByJob.get(jobId);
    if (run === undefined) {
      pending++;
      return emptyRow(i + 1, jobId, null, 'pending');
    }
    if (run.status === 'running') {
      running++;
      return emptyRow(i + 1, jobId, run.task, run.status);
    }
    checkUsage(run);
    const status = run.status;
    tally.add(status, run);
    return {
      index: i + 1,
      jobId,
      task: run.task,
      status,
      finished: true,
      stopReason: run.stopReason,
      steps: run.steps,
      toolCalls: run.toolCalls,
      promptTokens: run.promptTokens,
      completionTokens: run.completionTokens,
      totalTokens: run.totalTokens,
      costUsd: run.costUsd,
      answer: run.answer,
      error: run.error?.message ?? null,
      ...(run.stopDetail ? { stopDetail: run.stopDetail } : {}),
      ...(run.output === undefined ? {} : { output: run.output }),
    };
  });
  const summary = tally.summary(batch.batchId, jobIds.length);
  const called = calledRunsByTask(listed, runs);
  for (const row of rows) {
    const tree = called.get(row.jobId);
    if (tree) row.called = tree;
  }

  const state: BatchState = running === 0 && pending === 0 ? 'completed' : 'running';
  if (batch.state === 'completed' && state !== 'completed') {
    warnings.push(`the batch row says completed, but ${running + pending} task(s) have no finished run`);
  }
  if (batch.summary !== null && batch.summary !== undefined && !sameSummary(batch.summary, summary)) {
    warnings.push(
      'the summary stored with the batch differs from the sum over its runs; this report shows the sum',
    );
  }

  const position = new Map(jobIds.map((jobId, i) => [jobId, i + 1]));
  const emails = (options.emails ?? [])
    .flatMap((email) => {
      const index = position.get(email.jobId);
      return index === undefined ? [] : [{ ...email, index }];
    })
    .sort((a, b) => a.index - b.index || a.callKey.localeCompare(b.callKey));

  return {
    batchId: batch.batchId,
    name: batch.name,
    state,
    createdAt: batch.createdAt,
    completedAt: batch.completedAt,
    generatedAt: options.generatedAt ?? new Date(),
    budget: { maxCostUsd: batch.maxCostUsd, maxTokens: batch.maxTokens },
    summary,
    running,
    pending,
    rows,
    warnings,
    emails,
    forecast: forecastAgainstActual(batch.forecast, [...runsByJob.values()], summary.usage.costUsd, warnings),
    tenants: tenantTotals([...runsByJob.values()]),
    approvals: approvalTotals(options.approvals ?? [], position),
  };
}

function uniqueJobIds(jobIds: readonly string[], warnings: string[]): string[] {
  const unique = [...new Set(jobIds)];
  if (unique.length !== jobIds.length) {
    warnings.push(
      `the batch lists ${jobIds.length - unique.length} job id(s) twice; each task is counted once`,
    );
  }
  return unique;
}

function emptyRow(index: number, jobId: string, task: string | null, status: TaskState): TaskReportRow {
  return {
    index,
    jobId,
    task,
    status,
    finished: false,
    stopReason: null,
    steps: null,
    toolCalls: null,
    promptTokens: null,
    completionTokens: null,
    totalTokens: null,
    costUsd: null,
    answer: null,
    error: null,
  };
}

function checkUsage(run: BatchRunInput): void {
  const counts = {
    steps: run.steps,
    toolCalls: run.toolCalls,
    promptTokens: run.promptTokens,
    completionTokens: run.completionTokens,
    totalTokens: run.totalTokens,
  };
  for (const [field, value] of Object.entries(counts)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`run ${run.jobId}: ${field} must be a non-negative integer, got ${value}`);
    }
  }
  if (!Number.isFinite(run.costUsd) || run.costUsd < 0 || run.costUsd >= 1e15) {
    throw new RangeError(`run ${run.jobId}: costUsd must be a non-negative amount, got ${run.costUsd}`);
  }
}

function sameSummary(stored: unknown, computed: BatchSummary): boolean {
  if (typeof stored !== 'object' || stored === null) return false;
  const s = stored as Partial<Record<keyof BatchSummary, unknown>>;
  const usage = (s.usage ?? {}) as Partial<Record<keyof BatchUsage, unknown>>;
  return (
    s.tasks === computed.tasks &&
    s.succeeded === computed.succeeded &&
    s.stopped === computed.stopped &&
    s.failed === computed.failed &&
    usage.promptTokens === computed.usage.promptTokens &&
    usage.completionTokens === computed.usage.completionTokens &&
    usage.totalTokens === computed.usage.totalTokens &&
    typeof usage.costUsd === 'number' &&
    Math.abs(usage.costUsd - computed.usage.costUsd) < 5e-11
  );
}

/** The totals of a report, as label and number pairs, in the order every rendering shows them. */
export function reportTotals(report: BatchReport): [string, number][] {
  const { summary } = report;
  return [
    ['Tasks', summary.tasks],
    ['Succeeded', summary.succeeded],
    ['Stopped', summary.stopped],
    ['Failed', summary.failed],
    ['Running', report.running],
    ['Pending', report.pending],
    ['Prompt tokens', summary.usage.promptTokens],
    ['Completion tokens', summary.usage.completionTokens],
    ['Total tokens', summary.usage.totalTokens],
    ...details(summary.usage),
  ];
}

/** The parts of the totals the endpoint reported, shown only for batches that have them. */
function details(usage: BatchUsage): [string, number][] {
  const rows: [string, number][] = [];
  if (usage.cachedPromptTokens) rows.push(['Cached prompt tokens', usage.cachedPromptTokens]);
  if (usage.reasoningTokens) rows.push(['Reasoning tokens', usage.reasoningTokens]);
  return rows;
}
