// The "done" records of effects claimed together (one model reply asking for three emails at once) leave in ONE
// write once every effect of the group has settled, or `delayMs` after the first of them recorded, whichever
// comes first; the call that made an effect does not wait for its record. That is safe because the claim, the
// write at most once rests on, is durable before the effect: an effect whose record never lands leaves its row
// pending and started, exactly as a crash between the effect and an awaited record does, and whoever meets
// the row (a resumed call, the sweeper) settles it with the tool's lookup, or reports it uncertain without one;
// it is never made again. A member that settles otherwise (failed, released, left pending with an error)
// stops holding the group back.

export interface DoneRecord {
  effectKey: string;
  value: unknown;
}

interface Waiting extends DoneRecord {
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Group {
  /** Members that have neither recorded nor settled otherwise. */
  open: Set<string>;
  records: Waiting[];
  timer: NodeJS.Timeout | undefined;
  createdAt: number;
}

/** A group none of whose open members is heard of again in this long is forgotten (a path that never settled). */
const FORGET_AFTER_MS = 10 * 60_000;

export class DoneRecords {
  private readonly byKey = new Map<string, Group>();
  /** Groups in the order they were made, for forgetting stale ones. */
  private readonly groups = new Set<Group>();

  constructor(
    private readonly write: (records: readonly DoneRecord[]) => Promise<void>,
    private readonly delayMs = 50,
  ) {}

  /** These effects were claimed together: their records wait for each other. */
  together(effectKeys: readonly string[]): void {
    this.forgetStale();
    const group: Group = { open: new Set(effectKeys), records: [], timer: undefined, createdAt: Date.now() };
    for (const key of effectKeys) {
      // Claimed again (a takeover by this process): it left its earlier group.
      const earlier = this.leave(key);
      if (earlier) this.flushWhenDue(earlier);
      this.byKey.set(key, group);
    }
    this.groups.add(group);
  }

  /** Resolves once the record is in; an effect claimed alone is written at once. */
  record(effectKey: string, value: unknown): Promise<void> {
    const group = this.leave(effectKey);
    if (!group) return this.write([{ effectKey, value }]);
    return new Promise((resolve, reject) => {
      group.records.push({ effectKey, value, resolve, reject });
      this.flushWhenDue(group);
    });
  }

  /** The effect settled without a done record: it no longer holds its group back. */
  settled(effectKey: string): void {
    const group = this.leave(effectKey);
    if (group) this.flushWhenDue(group);
  }

  private leave(effectKey: string): Group | undefined {
    const group = this.byKey.get(effectKey);
    if (!group) return undefined;
    this.byKey.delete(effectKey);
    group.open.delete(effectKey);
    return group;
  }

  private flushWhenDue(group: Group): void {
    if (group.open.size === 0) {
      this.flush(group);
      return;
    }
    if (group.records.length > 0) group.timer ??= setTimeout(() => this.flush(group), this.delayMs);
  }

  /** Writes what the group has; members still open record alone from now on. */
  private flush(group: Group): void {
    clearTimeout(group.timer);
    group.timer = undefined;
    this.groups.delete(group);
    for (const key of group.open) this.byKey.delete(key);
    group.open.clear();
    const records = group.records;
    group.records = [];
    if (records.length === 0) return;
    this.write(records).then(
      () => records.forEach((record) => record.resolve()),
      (error: unknown) => {
        if (records.length === 1) records[0]!.reject(error);
        // One record the store refuses (its row locked, say) must not leave the others unrecorded: each alone.
        else for (const record of records) this.write([record]).then(record.resolve, record.reject);
      },
    );
  }

  private forgetStale(): void {
    const before = Date.now() - FORGET_AFTER_MS;
    for (const group of this.groups) {
      if (group.createdAt > before) return;
      this.flush(group);
    }
  }
}
