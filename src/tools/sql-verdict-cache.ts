// The SQL guard's verdicts by the exact query text and the policy that decided them, so that a fleet running the
// same report task many times parses each statement once (the parse, in a worker thread, and the copy of its AST
// back are most of the guard's cost). Least recently used entries go first, bounded in entries and in bytes: a
// flood of distinct hostile queries costs at most maxBytes and evicts the others, nothing more.
//
// A hit returns what the guard would have decided itself: the key holds everything a verdict depends on (the
// text and the allowlist as configured; the messages quote nothing else), so one job's verdict tells another
// nothing it could not compute from its own query. Only verdicts that depend on nothing but those are stored
// (the caller leaves out a parse that timed out or a thread that failed: the machine's load, not the query).
import type { SqlGuardVerdict } from './sql-guard-verdict.js';

export interface VerdictCacheOptions {
  /** Default 1,000. */
  maxEntries?: number;
  /** Estimated bytes of keys and verdicts together. Default 4 MiB. */
  maxBytes?: number;
}

/** Bookkeeping of one Map entry (the entry, the verdict object, the tables array), roughly. */
const ENTRY_OVERHEAD_BYTES = 200;

interface Entry {
  verdict: SqlGuardVerdict;
  bytes: number;
}

export class VerdictCache {
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(options: VerdictCacheOptions = {}) {
    this.maxEntries = Math.max(0, options.maxEntries ?? 1_000);
    this.maxBytes = Math.max(0, options.maxBytes ?? 4 * 1024 * 1024);
  }

  /** The key of a query under a policy: the allowlist exactly as given (its spelling is quoted in refusals). */
  static key(sql: string, allowedTables: readonly string[] | undefined): string {
    return `${allowedTables ? JSON.stringify(allowedTables) : ''}\u0000${sql}`;
  }

  /** A copy of the stored verdict (callers may change theirs), now the most recently used; or undefined. */
  get(key: string): SqlGuardVerdict | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return copy(entry.verdict);
  }

  set(key: string, verdict: SqlGuardVerdict): void {
    const bytes = sizeOf(key, verdict);
    if (bytes > this.maxBytes || this.maxEntries === 0) return;
    this.delete(key);
    this.entries.set(key, { verdict: copy(verdict), bytes });
    this.bytes += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Estimated bytes held. */
  get heldBytes(): number {
    return this.bytes;
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

function copy(verdict: SqlGuardVerdict): SqlGuardVerdict {
  return verdict.ok ? { ok: true, tables: [...verdict.tables], sql: verdict.sql } : { ...verdict };
}

/** Two bytes per UTF-16 unit of every string kept, plus the entry's bookkeeping. */
function sizeOf(key: string, verdict: SqlGuardVerdict): number {
  const text = verdict.ok
    ? verdict.sql.length + verdict.tables.reduce((sum, table) => sum + table.length, 0)
    : verdict.reason.length;
  return ENTRY_OVERHEAD_BYTES + 2 * (key.length + text);
}
