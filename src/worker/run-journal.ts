// One stream of MySQL writes for every job of a process: run starts, step traces and run finishes wait here together
// and leave in ONE query (one multi-row statement per kind, sent together), because MySQL pays per round trip, parse
// and commit far more than per row, and a worker with many jobs in flight starts a run, ends a step or finishes a
// run every few milliseconds. Writes wait at most `delayMs` (or until `maxRows` are waiting); each caller is told
// when its own rows are in; a job that is ending has the waiting batch written at once (`expedite`, which a finish
// implies). Until then the traces stay parked in Redis (trace-writer); a start or a finish that never lands fails
// the job's attempt, and BullMQ's retry writes it again (every write is an upsert). Each query's duration goes to
// `onWrite` (the worker's agentfleet_store_write_seconds).
import { performance } from 'node:perf_hooks';
import type { AgentResult, StepTrace } from '../kernel/types.js';
import {
  runNotFound,
  type FinishRunInput,
  type JournalEntries,
  type RunsRepository,
  type StartRunInput,
  type StepRowInput,
} from '../store/runs-repository.js';

/** One caller's rows and how to answer it. */
interface Waiter extends JournalEntries {
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Waiting {
  starts: StartRunInput[];
  steps: StepRowInput[];
  finishes: FinishRunInput[];
  waiters: Waiter[];
}

const empty = (): Waiting => ({ starts: [], steps: [], finishes: [], waiters: [] });

export interface RunJournalOptions {
  /** How long a write waits for others to share its query. Default: 50 ms. */
  delayMs?: number;
  /** Rows (starts, steps and finishes) that send the waiting batch at once. Default: 200. */
  maxRows?: number;
  /**
   * Told how long each query took, in milliseconds, whether it succeeded or failed: every batch, and each
   * caller's query when a failed batch is written again caller by caller (the metrics).
   */
  onWrite?: (ms: number) => void;
}

export class RunJournal {
  private batch: Waiting = empty();
  private timer: NodeJS.Timeout | undefined;
  private expedited = false;
  private readonly delayMs: number;
  private readonly maxRows: number;
  private readonly onWrite: ((ms: number) => void) | undefined;

  /** `repository` must sit on a pool that allows multiple statements (store/pool.ts). */
  constructor(
    private readonly repository: RunsRepository,
    options: RunJournalOptions = {},
  ) {
    this.delayMs = options.delayMs ?? 50;
    this.maxRows = options.maxRows ?? 200;
    this.onWrite = options.onWrite;
  }

  /** Resolves once the run's start (`agent_runs`, status running) is in MySQL; rejects when the write failed. */
  start(input: StartRunInput): Promise<void> {
    return this.enqueue({ starts: [input], steps: [], finishes: [] });
  }

  /** Resolves once these traces are in MySQL; rejects when the write failed. */
  write(jobId: string, traces: readonly StepTrace[]): Promise<void> {
    if (traces.length === 0) return Promise.resolve();
    // Many traces at once (a resumed run's parked steps, a backlog from an outage) may outgrow the server's
    // max_allowed_packet (16 MB on MariaDB), which would fail them the same way on every attempt: they leave in
    // queries of bounded size, each chunk after the first in a query of its own.
    const chunks = chunksOf(traces, MAX_QUERY_BYTES);
    const written = chunks.map((chunk, i) => {
      if (i > 0) this.flush();
      return this.enqueue({ starts: [], steps: chunk.map((trace) => ({ jobId, trace })), finishes: [] });
    });
    if (chunks.length > 1) this.expedite();
    return Promise.all(written).then(() => undefined);
  }

  /**
   * Stores a started run's result, with the traces still waiting, at the end of this turn of the event loop.
   * Rejects when the write failed or the run was never started (StoreError run_not_found).
   */
  finish(result: AgentResult, finishedAt: Date = new Date()): Promise<void> {
    const written = this.enqueue({ starts: [], steps: [], finishes: [{ result, finishedAt }] });
    this.expedite();
    return written;
  }

  /** Writes the waiting batch at the end of this turn of the event loop (with whatever else comes in it). */
  expedite(): void {
    if (this.expedited || this.batch.waiters.length === 0) return;
    this.expedited = true;
    setImmediate(() => this.flush());
  }

  private enqueue(entries: JournalEntries): Promise<void> {
    return new Promise((resolve, reject) => {
      const batch = this.batch;
      batch.starts.push(...entries.starts);
      batch.steps.push(...entries.steps);
      batch.finishes.push(...entries.finishes);
      batch.waiters.push({ ...entries, resolve, reject });
      const rows = batch.starts.length + batch.steps.length + batch.finishes.length;
      if (rows >= this.maxRows) this.expedite();
      else this.timer ??= setTimeout(() => this.flush(), this.delayMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.expedited = false;
    const batch = this.batch;
    if (batch.waiters.length === 0) return;
    this.batch = empty();
    this.timed(batch).then(
      ({ notStarted }) => answer(batch.waiters, notStarted),
      // One caller's bad row (a value too long for its column, say) must not fail everyone else's: the batch is
      // written again caller by caller, and only the failing ones are told. When MySQL is down they all are.
      () => batch.waiters.forEach((waiter) => void this.writeAlone(waiter)),
    );
  }

  private async writeAlone(waiter: Waiter): Promise<void> {
    try {
      const { notStarted } = await this.timed(waiter);
      answer([waiter], notStarted);
    } catch (error) {
      waiter.reject(error);
    }
  }

  /** One query, its duration told to `onWrite` however it ends. */
  private timed(entries: JournalEntries): ReturnType<RunsRepository['writeJournal']> {
    const onWrite = this.onWrite;
    if (!onWrite) return this.repository.writeJournal(entries);
    const started = performance.now();
    const written = this.repository.writeJournal(entries);
    const told = () => onWrite(performance.now() - started);
    written.then(told, told);
    return written;
  }
}

/** What the traces of one query may weigh: a quarter of MariaDB's default max_allowed_packet. */
const MAX_QUERY_BYTES = 4 * 1024 * 1024;

/**
 * Consecutive runs of traces of at most `maxBytes` each (a trace heavier alone goes alone). Weighed only when
 * there are several: a trace's observations are stored twice (joined, and as JSON).
 */
function chunksOf(traces: readonly StepTrace[], maxBytes: number): StepTrace[][] {
  if (traces.length === 1) return [[...traces]];
  const chunks: StepTrace[][] = [];
  let chunk: StepTrace[] = [];
  let bytes = 0;
  for (const trace of traces) {
    const weight = 2 * Buffer.byteLength(JSON.stringify(trace));
    if (chunk.length > 0 && bytes + weight > maxBytes) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(trace);
    bytes += weight;
  }
  chunks.push(chunk);
  return chunks;
}

function answer(waiters: readonly Waiter[], notStarted: readonly string[]): void {
  const missing = new Set(notStarted);
  for (const waiter of waiters) {
    const gone = waiter.finishes.find((finish) => missing.has(finish.result.jobId));
    if (gone) waiter.reject(runNotFound(gone.result.jobId));
    else waiter.resolve();
  }
}
