// `npm run approvals`: list, show and decide approvals from a shell, through the same desk as the API and the
// console, as `shell:<user>`. Reads and writes the store at MYSQL_URL; a decision also wakes the parked job on
// the tasks queue and publishes `approval.decided` (the fleet's Redis: REDIS_URL, REDIS_CLUSTER_NODES or
// REDIS_SENTINELS; QUEUE_PREFIX): Redis is opened only to decide.
// Exit 0 done; 1 no such approval, decided before (the first decision is printed), a decision refused, or the
// store failing; 2 bad arguments.
import { Queue } from 'bullmq';
import type { RedisClient } from '../queue/redis.js';
import { createRedis } from '../queue/redis.js';
import type { RedisTarget } from '../queue/redis-target.js';
import { EVENTS_QUEUE, TASKS_QUEUE } from '../queue/names.js';
import { parseMysqlUrl } from '../store/mysql-url.js';
import { createStorePool } from '../store/pool.js';
import { terminalSafe, terminalSafeJson } from '../reports/text.js';
import type { FieldIssue } from '../queue/field-issue.js';
import { ApprovalDesk, type DecisionOutcome } from './approval-desk.js';
import { ApprovalEvents } from './approval-events.js';
import { ApprovalStore } from './approval-store.js';
import { APPROVALS_USAGE, parseApprovalsArgs, type ApprovalsArgs } from './approvals-args.js';
import { describeDecision, renderApprovalTable } from './approvals-table.js';
import { wakeParkedJob } from './wake-parked-job.js';
import { shellCaller } from '../util/shell-caller.js';

export interface ApprovalsConfig {
  mysqlUrl: string;
  redis: RedisTarget;
  queuePrefix: string;
}

export interface ApprovalsIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

type Decide = Extract<ApprovalsArgs, { kind: 'decide' | 'decide-batch' }>;

/** Who decides from this shell: the login name of the process's user. */
export const shellDecider = shellCaller;

export async function runApprovalsCommand(
  argv: readonly string[],
  config: () => ApprovalsConfig,
  io: ApprovalsIo,
  by: string = shellDecider(),
): Promise<number> {
  const args = parseApprovalsArgs(argv);
  if (args.kind === 'help') {
    io.stdout(`${APPROVALS_USAGE}\n`);
    return 0;
  }
  if (args.kind === 'error') {
    io.stderr(`approvals: ${args.message}\n${APPROVALS_USAGE}\n`);
    return 2;
  }
  const settings = config();
  const pool = await createStorePool(settings.mysqlUrl, { connectionLimit: 4 });
  const redis = new LazyQueues(settings);
  try {
    const store = new ApprovalStore(pool);
    const desk = new ApprovalDesk({
      store,
      // Redis is connected by the first decision recorded: listing, or a decision refused, needs none.
      wake: async (jobId) => wakeParkedJob(redis.queue(TASKS_QUEUE), jobId),
      events: { decided: (approval) => redis.events().decided(approval) },
      logger: {
        warn: (fields, message) =>
          io.stderr(`approvals: ${message} (${terminalSafe(String(fields['err']))})\n`),
      },
    });
    if (args.kind === 'list') {
      const approvals = await desk.list(args.filter);
      io.stdout(args.json ? `${terminalSafeJson(approvals)}\n` : renderApprovalTable(approvals));
      return 0;
    }
    if (args.kind === 'show') {
      const approval = await desk.get(args.id);
      if (!approval) return notFound(io, args.id);
      io.stdout(`${terminalSafeJson(approval)}\n`);
      return 0;
    }
    return await decide(desk, args, by, io);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ER_NO_SUCH_TABLE') throw error;
    const { database, redacted } = parseMysqlUrl(settings.mysqlUrl);
    io.stderr(
      `approvals: ${database} has no agent_approvals table (MYSQL_URL=${redacted}): is it the fleet's store? (npm run migrate creates it)\n`,
    );
    return 1;
  } finally {
    await redis.close();
    await pool.end().catch(() => undefined);
  }
}

async function decide(desk: ApprovalDesk, args: Decide, by: string, io: ApprovalsIo): Promise<number> {
  if (args.kind === 'decide-batch') {
    const { decided, conflicts } = await desk.decideBatch({ ...args, by });
    if (args.json) io.stdout(`${terminalSafeJson({ decided, conflicts })}\n`);
    else {
      const verb = args.decision === 'approve' ? 'approved' : 'rejected';
      io.stdout(
        `${verb} ${decided.length} waiting call(s) of ${terminalSafe(args.tool)} in batch ${terminalSafe(args.batchId)}\n`,
      );
      if (decided.length > 0) io.stdout(renderApprovalTable(decided));
      if (conflicts > 0) io.stdout(`${conflicts} decided by someone else or expired meanwhile\n`);
    }
    return 0;
  }
  const outcome = await desk.decide(args.id, {
    decision: args.decision,
    by,
    ...(args.reason === undefined ? {} : { reason: args.reason }),
    ...(args.arguments === undefined ? {} : { arguments: args.arguments }),
  });
  return report(outcome, args, io);
}

function report(
  outcome: DecisionOutcome,
  args: Extract<Decide, { kind: 'decide' }>,
  io: ApprovalsIo,
): number {
  if (outcome.kind === 'not_found') return notFound(io, args.id);
  if (outcome.kind === 'invalid') {
    io.stderr(`approvals: ${args.decision} refused: ${outcome.issues.map(flagIssue).join('; ')}\n`);
    return 1;
  }
  if (args.json) io.stdout(`${terminalSafeJson(outcome)}\n`);
  if (outcome.kind === 'conflict') {
    io.stderr(
      `approvals: already decided, the first decision stands: ${describeDecision(outcome.approval)}\n`,
    );
    return 1;
  }
  if (!args.json) io.stdout(`${describeDecision(outcome.approval)}\n`);
  return 0;
}

/** The desk's field, as the flag that gave it: `arguments.to` → `--arguments: to`. */
function flagIssue(issue: FieldIssue): string {
  const [field, ...rest] = issue.path.split('.');
  const flag = field === 'arguments' || field === 'reason' ? `--${field}` : field || 'decision';
  return terminalSafe(`${rest.length > 0 ? `${flag}: ${rest.join('.')}` : flag}: ${issue.message}`);
}

function notFound(io: ApprovalsIo, id: string): number {
  io.stderr(`approvals: no approval ${JSON.stringify(terminalSafe(id))}\n`);
  return 1;
}

/** The tasks and events queues, connected on first use only: listing needs no Redis. */
class LazyQueues {
  private redis: RedisClient | undefined;
  private readonly queues = new Map<string, Queue>();
  private publisher: ApprovalEvents | undefined;

  constructor(private readonly settings: ApprovalsConfig) {}

  queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      if (!this.redis) {
        this.redis = createRedis(this.settings.redis, 'producer');
        // Failures reach the caller through the commands; the desk logs a failed wake or event.
        this.redis.on('error', () => undefined);
      }
      queue = new Queue(name, { connection: this.redis, prefix: this.settings.queuePrefix });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  events(): ApprovalEvents {
    this.publisher ??= new ApprovalEvents(this.queue(EVENTS_QUEUE));
    return this.publisher;
  }

  /** Disconnects at once: with Redis away, a queue's close would wait for a connection that never comes. */
  async close(): Promise<void> {
    const closing = [...this.queues.values()].map((queue) => queue.close().catch(() => undefined));
    this.redis?.disconnect();
    await Promise.all(closing);
  }
}
