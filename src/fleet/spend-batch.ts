// The spend ledger's bookings and settles asked for in one turn of the event loop leave as ONE script (in the
// order they were asked for), instead of one script each: with many jobs in flight, their model calls end and
// begin in the same turns, and each step's booking and settle would otherwise cost a command apiece. Each
// operation keeps its own answer and its own failure, as if sent alone. Why the turn, and what it costs:
// docs/limits.md (one script per turn).
import type { RedisClient } from '../queue/redis.js';
import { BATCH } from './spend-scripts.js';

export type LedgerOperation = 'reserve' | 'settle';

/** At most this many operations in one script: a batch runs alone in Redis, so a longer one delays the others. */
export const MAX_OPERATIONS_PER_SCRIPT = 64;

interface Queued {
  kind: LedgerOperation;
  keys: readonly string[];
  args: readonly (string | number)[];
  resolve: (reply: unknown) => void;
  reject: (error: unknown) => void;
}

/** An operation of a batch that failed in the script (the others ran): its error, as Redis would have replied. */
export class LedgerOperationError extends Error {}

export class LedgerBatcher {
  private queued: Queued[] = [];

  constructor(private readonly redis: RedisClient) {}

  /** Runs the operation with the others asked for in this turn; resolves to its own reply. */
  run(kind: LedgerOperation, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ kind, keys, args, resolve, reject });
    });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    // Every script is the batch's, even one of a single operation (a split's last, or one alone in its turn): a
    // server that knows one script and not another (a new version deployed, a flush) would run the known one
    // first (the other goes again as EVAL after its NOSCRIPT), and the operations out of the order they were
    // asked for, within a turn or across turns.
    for (let i = 0; i < queued.length; i += MAX_OPERATIONS_PER_SCRIPT) {
      const operations = queued.slice(i, i + MAX_OPERATIONS_PER_SCRIPT);
      // Thrown here, an error would end the process (this runs in setImmediate): it fails the operations.
      try {
        this.send(operations);
      } catch (error) {
        for (const op of operations) op.reject(error);
      }
    }
  }

  private send(operations: Queued[]): void {
    const keys: string[] = [];
    const args: (string | number)[] = [operations.length];
    for (const op of operations) {
      keys.push(...op.keys);
      args.push(op.kind === 'reserve' ? 'r' : 's', op.keys.length, op.args.length, ...op.args);
    }
    BATCH.run(this.redis, keys, args).then(
      (reply) => {
        if (!Array.isArray(reply) || reply.length !== operations.length) {
          const error = new Error(`spend ledger: unexpected batch reply ${JSON.stringify(reply)}`);
          for (const op of operations) op.reject(error);
          return;
        }
        operations.forEach((op, i) => {
          const answer: unknown = reply[i];
          if (Array.isArray(answer) && answer[0] === 'err') {
            op.reject(new LedgerOperationError(String(answer[1])));
          } else op.resolve(answer);
        });
      },
      (error: unknown) => {
        for (const op of operations) op.reject(error);
      },
    );
  }
}
