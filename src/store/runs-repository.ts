// Runs and their step traces in MySQL (docs/store.md). Every write is an upsert keyed by the job id (and step),
// because BullMQ may run a job again after a crash or a stall: the retry must update the run it started, and a
// resumed run that reports a step again must replace that step rather than add a second one.
//
// `VALUES(col)` in ON DUPLICATE KEY UPDATE is deprecated on MySQL 8 but still works there, and the row-alias
// form that replaces it does not exist on MariaDB.
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { ProtocolName } from '../kernel/protocol.js';
import type { ModelPrice } from '../kernel/pricing.js';
import type { AgentResult, StepTrace } from '../kernel/types.js';
import { StoreError } from '../kernel/errors.js';
import { toRunRow, toStepRow, type RunRow, type StepRow } from './rows.js';

export interface StartRunInput {
  jobId: string;
  task: string;
  model: string;
  protocol: ProtocolName;
  /** The fleet agent the run serves (`default` for a task without one); absent for records made before. */
  agent?: string | null;
  /** Whom the run is for (the task's `tenant`); absent or null for a task without one. */
  tenant?: string | null;
  /** The job whose agent called this one (a child agent's run); absent or null otherwise. */
  parentJobId?: string | null;
  /** The prices the run is billed at (kept with the run: a later price change never rewrites its bill). */
  prices?: ModelPrice | null;
  batchId?: string | null;
  metadata?: unknown;
  /** The job's attempt number, from 1. */
  attempt: number;
  startedAt?: Date;
}

/** A step trace and the job it belongs to: rows of several jobs go in one statement. */
export interface StepRowInput {
  jobId: string;
  trace: StepTrace;
}

// DECIMAL(16,10): rounding here keeps what is read back equal to what was written. A value past the column (an
// endpoint may report any count up to 2^53) or not a number would fail the whole statement, and with it the
// run's record and result on every attempt: it is held to the column instead.
const DECIMAL_MAX = 999_999.9999999999;
const toDecimal = (usd: number): number =>
  Number.isFinite(usd) ? Number(Math.min(DECIMAL_MAX, Math.max(-DECIMAL_MAX, usd)).toFixed(10)) : 0;
// INT columns (counts, milliseconds): the same, held to 0..2^31-1.
const INT_MAX = 2_147_483_647;
const toInt = (n: number): number => (Number.isFinite(n) ? Math.min(INT_MAX, Math.max(0, Math.round(n))) : 0);
// MariaDB's JSON check refuses the escape JSON.stringify writes for a lone surrogate (a model's text may carry
// one), failing the statement: such an escape becomes U+FFFD, as the driver does for the text columns. Only an
// odd run of backslashes before the `u` makes an escape (`\\ud800` is a backslash, then the text "ud800").
export const toJson = (value: unknown): string =>
  JSON.stringify(value).replace(/(\\+)u(d[89a-f][0-9a-f]{2})/g, (all: string, slashes: string) =>
    slashes.length % 2 === 1 ? `${slashes.slice(0, -1)}\\ufffd` : all,
  );
const STEP_ERROR_MAX_CHARS = 10_000; // a TEXT column holds 64 KB, 4 bytes a character at worst

export class RunsRepository {
  constructor(private readonly pool: Pool) {}

  /** Records a start; a retried or resumed job keeps its first start time and counts one more attempt. */
  async startRun(input: StartRunInput): Promise<void> {
    await this.startRuns([input]);
  }

  /** Records the starts of any number of runs in one statement (each as `startRun` would). */
  async startRuns(inputs: readonly StartRunInput[]): Promise<void> {
    if (inputs.length === 0) return;
    const { sql, values } = startRunsStatement(inputs);
    await this.pool.query(sql, values);
  }

  /** Writes the traces in one statement; a step already stored is overwritten. */
  async appendSteps(jobId: string, traces: readonly StepTrace[]): Promise<void> {
    await this.appendStepRows(traces.map((trace) => ({ jobId, trace })));
  }

  /** Writes the traces of any number of jobs in one statement; a step already stored is overwritten. */
  async appendStepRows(rows: readonly StepRowInput[]): Promise<void> {
    if (rows.length === 0) return;
    const { sql, values } = stepRowsStatement(rows);
    await this.pool.query(sql, values);
  }

  /**
   * Stores the result of a started run. With `unwrittenSince` (the store sweeper's, for a run left running), only
   * a row still `running` and not written since then: a run started again meanwhile is not ended with it.
   */
  async finishRun(
    result: AgentResult,
    finishedAt: Date = new Date(),
    options: { unwrittenSince?: Date } = {},
  ): Promise<void> {
    const statement = finishRunStatement({ result, finishedAt });
    const { sql, values } =
      options.unwrittenSince === undefined
        ? statement
        : {
            sql: `${statement.sql} AND status = 'running' AND updated_at < ?`,
            values: [...statement.values, options.unwrittenSince],
          };
    const [header] = await this.pool.query<ResultSetHeader>(sql, values);
    if (header.affectedRows === 0) throw runNotFound(result.jobId);
  }

  /**
   * Starts, steps and finishes of any number of runs in ONE query (the pool must allow multiple statements):
   * starts first, then steps, then finishes, in one transaction. Answers the finishes whose run was never
   * started; throws, having written nothing, when a statement fails. All or nothing, because the journal writes a
   * failed batch again caller by caller, and a start is not idempotent (it counts one more attempt).
   */
  async writeJournal(entries: JournalEntries): Promise<{ notStarted: string[] }> {
    const statements: { sql: string; values: unknown[] }[] = [];
    if (entries.starts.length > 0) statements.push(startRunsStatement(entries.starts));
    if (entries.steps.length > 0) statements.push(stepRowsStatement(entries.steps));
    const finishesFrom = statements.length + 1; // after START TRANSACTION's header
    for (const finish of entries.finishes) statements.push(finishRunStatement(finish));
    if (statements.length === 0) return { notStarted: [] };
    const connection = await this.pool.getConnection();
    let results: ResultSetHeader[];
    try {
      [results] = await connection.query<ResultSetHeader[]>(
        ['START TRANSACTION', ...statements.map((s) => s.sql), 'COMMIT'].join(';\n'),
        statements.flatMap((s) => s.values),
      );
    } catch (error) {
      // A statement failed and the server skipped the rest, COMMIT included: the transaction is still open on
      // this connection. One that cannot roll back is not given back to the pool.
      await connection.query('ROLLBACK').then(
        () => connection.release(),
        () => connection.destroy(),
      );
      throw error;
    }
    connection.release();
    const notStarted = entries.finishes
      .filter((_, i) => results[finishesFrom + i]?.affectedRows === 0)
      .map((finish) => finish.result.jobId);
    return { notStarted };
  }

  async getRun(jobId: string): Promise<RunRow | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM agent_runs WHERE job_id = ?', [
      jobId,
    ]);
    return rows[0] ? toRunRow(rows[0]) : null;
  }

  async getSteps(jobId: string): Promise<StepRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT * FROM agent_steps WHERE job_id = ? ORDER BY step',
      [jobId],
    );
    return rows.map(toStepRow);
  }
}

export interface FinishRunInput {
  result: AgentResult;
  finishedAt: Date;
}

export interface JournalEntries {
  starts: readonly StartRunInput[];
  steps: readonly StepRowInput[];
  finishes: readonly FinishRunInput[];
}

export const runNotFound = (jobId: string): StoreError =>
  new StoreError('run_not_found', `cannot finish run ${jobId}: it was never started`);

function startRunsStatement(inputs: readonly StartRunInput[]): { sql: string; values: unknown[] } {
  const now = new Date();
  return {
    sql: `INSERT INTO agent_runs (job_id, batch_id, task, model, protocol, agent, tenant, parent_job_id, prices,
         status, metadata, attempts, started_at)
       VALUES ${inputs.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)").join(', ')}
       ON DUPLICATE KEY UPDATE
         status = 'running', stop_reason = NULL, stop_detail = NULL, answer = NULL, output = NULL, error = NULL,
         -- a run started again (a retry, a reused job id) writes steps anew: none of them were deleted
         finished_at = NULL, steps_deleted_at = NULL,
         model = VALUES(model), protocol = VALUES(protocol), agent = COALESCE(VALUES(agent), agent),
         tenant = COALESCE(VALUES(tenant), tenant),
         parent_job_id = COALESCE(VALUES(parent_job_id), parent_job_id),
         prices = COALESCE(VALUES(prices), prices),
         batch_id = COALESCE(VALUES(batch_id), batch_id),
         metadata = COALESCE(VALUES(metadata), metadata),
         attempts = GREATEST(attempts + 1, VALUES(attempts))`,
    values: inputs.flatMap((input) => [
      input.jobId,
      input.batchId ?? null,
      input.task,
      input.model,
      input.protocol,
      input.agent ?? null,
      input.tenant ?? null,
      input.parentJobId ?? null,
      input.prices ? toJson(input.prices) : null,
      input.metadata === undefined ? null : toJson(input.metadata),
      input.attempt,
      input.startedAt ?? now,
    ]),
  };
}

function stepRowsStatement(rows: readonly StepRowInput[]): { sql: string; values: unknown[] } {
  return {
    sql: `INSERT INTO agent_steps (job_id, step, kind, action, observation, prompt_tokens, completion_tokens,
         cached_prompt_tokens, reasoning_tokens, cost_usd, latency_ms, model_calls, error, observations,
         model_latency_ms, events)
       VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON DUPLICATE KEY UPDATE
         kind = VALUES(kind), action = VALUES(action), observation = VALUES(observation),
         prompt_tokens = VALUES(prompt_tokens), completion_tokens = VALUES(completion_tokens),
         cached_prompt_tokens = VALUES(cached_prompt_tokens), reasoning_tokens = VALUES(reasoning_tokens),
         cost_usd = VALUES(cost_usd), latency_ms = VALUES(latency_ms), model_calls = VALUES(model_calls),
         error = VALUES(error), observations = VALUES(observations),
         model_latency_ms = VALUES(model_latency_ms), events = VALUES(events)`,
    values: rows.flatMap(({ jobId, trace }) => [
      jobId,
      trace.step,
      trace.kind,
      toJson(trace.actions),
      trace.observations.join('\n'),
      toInt(trace.promptTokens),
      toInt(trace.completionTokens),
      toInt(trace.cachedPromptTokens ?? 0),
      toInt(trace.reasoningTokens ?? 0),
      toDecimal(trace.costUsd),
      toInt(trace.latencyMs),
      toInt(trace.modelCalls),
      trace.error === null ? null : trace.error.slice(0, STEP_ERROR_MAX_CHARS),
      // Each observation apart, for the run console (the column above joins them).
      toJson(trace.observations),
      toInt(trace.modelLatencyMs),
      trace.events && trace.events.length > 0 ? toJson(trace.events) : null,
    ]),
  };
}

function finishRunStatement({ result, finishedAt }: FinishRunInput): { sql: string; values: unknown[] } {
  return {
    sql: `UPDATE agent_runs
       SET status = ?, stop_reason = ?, answer = ?, output = ?, steps = ?, tool_calls = ?, prompt_tokens = ?,
         completion_tokens = ?, total_tokens = ?, cached_prompt_tokens = ?, reasoning_tokens = ?,
         usage_estimated = ?, cost_usd = ?, flex_saved_usd = ?, error = ?, stop_detail = ?, finished_at = ?
       WHERE job_id = ?`,
    values: [
      result.status,
      result.stopReason,
      result.answer,
      // SQL NULL for a run without an output schema; the JSON `null` for one that ended without a value.
      result.output === undefined ? null : toJson(result.output),
      toInt(result.steps),
      toInt(result.toolCalls),
      toInt(result.usage.promptTokens),
      toInt(result.usage.completionTokens),
      toInt(result.usage.totalTokens),
      toInt(result.usage.cachedPromptTokens ?? 0),
      toInt(result.usage.reasoningTokens ?? 0),
      result.usage.estimated ? 1 : 0,
      toDecimal(result.usage.costUsd),
      toDecimal(result.usage.flexSavedUsd ?? 0),
      result.error === null ? null : toJson(result.error),
      result.stopDetail?.slice(0, 2_000) ?? null,
      finishedAt,
      result.jobId,
    ],
  };
}
