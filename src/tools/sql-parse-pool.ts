// node-sql-parser off the event loop, under a hard time limit. It is a PEG parser that backtracks: some valid
// shapes (`CAST((…` or `CASE (…` nested a dozen deep, 200 characters) take seconds to tens of seconds, and a
// parse cannot be interrupted from inside. So each parse runs in a worker thread; one that outlives its
// deadline is terminated (V8 stops it mid-loop) and a spare thread takes its place while a new spare starts:
// starting one (loading the grammar) costs about as much as a hundred ordinary parses, and the next query
// should not wait for it. The spares are started at the first missed deadline, not before: most processes never
// see one, and starting two with every worker cost it 0.14 s of CPU (of 2.0 s: bench/worker-startup.ts). So the
// first query a process stops at its deadline waits once for a thread to start for its second try (its
// deadline counts from when a thread has it).
// One parse at a time by default: a legitimate query parses in a few milliseconds, and a second busy thread
// would compete with the event loop for a 2-core machine.
//
// The thread's code is plain CommonJS passed as a string (`eval`), not a file of its own: it then runs the
// same under tsx, vitest and compiled JavaScript, with nothing to copy next to the build.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export type ParseOutcome =
  | { kind: 'parsed'; ast: unknown; tableList: unknown }
  | { kind: 'syntax_error'; message: string; location: unknown }
  | { kind: 'timeout' }
  | { kind: 'failed'; message: string };

export interface SqlParsePoolOptions {
  /** Threads parsing at once. Default 1. */
  threads?: number;
  /**
   * Idle threads kept started, once a parse has missed its deadline (or `ready()` was called), to replace one
   * stopped at its deadline without a wait. Default 2: a refused parse stops two threads (its try and its
   * second chance).
   */
  spares?: number;
  /**
   * Time one parse may take once a thread has it; past it the thread is terminated, and the parse is given one
   * more try on a fresh thread before it is refused (so at most about twice this in all). Default 115 ms: a
   * query within the guard's limits parses in a few milliseconds, a 2,000-token IN list in about 80.
   */
  deadlineMs?: number;
}

const PARSER_PATH = createRequire(import.meta.url).resolve('node-sql-parser/build/mysql.js');

const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const parser = new (require(workerData.parserPath).Parser)();
parentPort.on('message', ({ id, sql }) => {
  let reply;
  try {
    const { ast, tableList } = parser.parse(sql, { database: 'MySQL' });
    reply = { id, kind: 'parsed', ast, tableList };
  } catch (error) {
    reply = { id, kind: 'syntax_error', message: String(error && error.message), location: error && error.location };
  }
  try {
    parentPort.postMessage(reply);
  } catch (error) {
    parentPort.postMessage({ id, kind: 'failed', message: 'unexpected parser output: ' + String(error) });
  }
});
// A first parse compiles the grammar's hot paths; done here, it does not count against a query's deadline.
parser.parse(workerData.warmUpSql, { database: 'MySQL' });
parentPort.postMessage({ ready: true });
`;

const WARM_UP_SQL =
  'WITH w AS (SELECT 1 AS a) SELECT t.a, COUNT(*) AS n, SUM(CASE WHEN t.b > 0 THEN 1 ELSE 0 END), ' +
  'CAST(t.c AS CHAR), ROW_NUMBER() OVER (PARTITION BY t.a ORDER BY t.d) FROM t JOIN u ON u.id = t.id ' +
  "WHERE t.x IN (1, 2) AND t.y LIKE 'a%' AND EXISTS (SELECT 1 FROM w) GROUP BY t.a HAVING COUNT(*) > 1 " +
  'ORDER BY n DESC LIMIT 5';

interface Job {
  id: number;
  sql: string;
  /** Deadlines this parse has already missed. */
  expired: number;
  resolve: (outcome: ParseOutcome) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

export class SqlParsePool {
  private readonly threads: number;
  private readonly size: number;
  private readonly deadlineMs: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private readyWaiters: (() => void)[] = [];
  private nextId = 1;
  private closed = false;
  /** Spares are kept from the first missed deadline on (or once `ready()` asked for them). */
  private withSpares = false;

  constructor(options: SqlParsePoolOptions = {}) {
    this.threads = Math.max(1, options.threads ?? 1);
    this.size = this.threads + Math.max(0, options.spares ?? 2);
    this.deadlineMs = options.deadlineMs ?? 115;
  }

  /** Threads started and not stopped, spares included. */
  get threadsStarted(): number {
    return this.slots.length;
  }

  /** The time limit of one parse, for messages. */
  get deadline(): number {
    return this.deadlineMs;
  }

  /** Starts the parsing threads now rather than at the first parse (the spares too once they are kept). */
  warmUp(): void {
    const wanted = this.withSpares ? this.size : this.threads;
    while (!this.closed && this.slots.length < wanted) this.slots.push(this.spawn());
  }

  /** Starts the spares too, and resolves once every thread has started (or one failed to start). */
  ready(): Promise<void> {
    this.withSpares = true;
    this.warmUp();
    return new Promise((resolve) => {
      this.readyWaiters.push(resolve);
      this.notifyReady();
    });
  }

  parse(sql: string): Promise<ParseOutcome> {
    if (this.closed) return Promise.resolve({ kind: 'failed', message: 'the parser pool is closed' });
    this.warmUp();
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, sql, resolve, expired: 0 });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.readyWaiters.splice(0)) resolve();
    for (const job of this.queue.splice(0))
      job.resolve({ kind: 'failed', message: 'the parser pool is closed' });
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot, 'the parser pool is closed')));
  }

  private spawn(): Slot {
    const worker = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { parserPath: PARSER_PATH, warmUpSql: WARM_UP_SQL },
    });
    const slot: Slot = { worker, ready: false };
    worker.unref();
    worker.on('message', (message: { ready?: boolean; id?: number } & Record<string, unknown>) => {
      if (message.ready) {
        slot.ready = true;
        this.dispatch();
        this.notifyReady();
        return;
      }
      const job = slot.job;
      if (!job || message.id !== job.id) return;
      this.finish(slot);
      job.resolve(toOutcome(message));
      this.dispatch();
    });
    // A thread that dies (out of memory, a crash in the parser) fails its parse and is replaced. One that dies
    // before it is ready (the parser cannot load) fails every waiting parse instead: respawning it at once
    // would only loop; the next parse tries again.
    const replace = (why: string) => {
      const at = this.slots.indexOf(slot);
      if (at < 0) return;
      this.slots.splice(at, 1);
      const job = slot.job;
      this.finish(slot);
      job?.resolve({ kind: 'failed', message: why });
      if (!slot.ready) {
        for (const queued of this.queue.splice(0)) queued.resolve({ kind: 'failed', message: why });
        for (const resolve of this.readyWaiters.splice(0)) resolve();
        return;
      }
      if (!this.closed) this.slots.push(this.spawn());
      this.dispatch();
    };
    worker.on('error', (error) => replace(`the parser thread failed: ${error.message}`));
    worker.on('exit', (code) => replace(`the parser thread exited (${code})`));
    return slot;
  }

  private notifyReady(): void {
    if (this.closed || this.slots.length < this.size || this.slots.some((slot) => !slot.ready)) return;
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private dispatch(): void {
    let busy = this.slots.filter((slot) => slot.job).length;
    for (const slot of this.slots) {
      if (this.queue.length === 0 || busy >= this.threads) break;
      if (!slot.ready || slot.job) continue;
      busy += 1;
      const job = this.queue.shift() as Job;
      slot.job = job;
      // Referenced while busy: a pending parse keeps the process alive, an idle pool does not.
      slot.worker.ref();
      slot.timer = setTimeout(() => this.expire(slot, job), this.deadlineMs);
      slot.worker.postMessage({ id: job.id, sql: job.sql });
    }
  }

  /** The parse took too long: its thread is stopped and replaced, the caller told. */
  private expire(slot: Slot, job: Job): void {
    if (slot.job !== job) return;
    const at = this.slots.indexOf(slot);
    if (at >= 0) this.slots.splice(at, 1);
    this.finish(slot);
    // One second chance on a fresh thread: a legitimate parse that a loaded machine left unscheduled past the
    // deadline passes then, while a parse that backtracks misses it again (it needs seconds, not milliseconds).
    job.expired += 1;
    if (job.expired < 2) this.queue.unshift({ ...job, id: this.nextId++ });
    else job.resolve({ kind: 'timeout' });
    void this.retire(slot, 'timeout');
    this.withSpares = true;
    this.warmUp();
    this.dispatch();
  }

  private finish(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.job = undefined;
    slot.worker.unref();
  }

  private async retire(slot: Slot, why: string): Promise<void> {
    const job = slot.job;
    this.finish(slot);
    job?.resolve({ kind: 'failed', message: why });
    slot.worker.removeAllListeners('exit');
    slot.worker.removeAllListeners('error');
    slot.worker.on('error', () => {});
    await slot.worker.terminate();
  }
}

function toOutcome(message: Record<string, unknown>): ParseOutcome {
  switch (message['kind']) {
    case 'parsed':
      return { kind: 'parsed', ast: message['ast'], tableList: message['tableList'] };
    case 'syntax_error':
      return { kind: 'syntax_error', message: String(message['message']), location: message['location'] };
    default:
      return { kind: 'failed', message: String(message['message'] ?? 'unknown reply') };
  }
}
