// The deferred done records of effects claimed together: one write once every member settled, or after the
// delay; a member that settles otherwise stops holding the group back; a failed write reaches every waiter.
import { describe, expect, it } from 'vitest';
import { DoneRecords, type DoneRecord } from '../../../src/effects/effect-done-records.js';
import { SameTurnBatches } from '../../../src/effects/same-turn-batches.js';

function recorder(fail = false) {
  const writes: string[][] = [];
  const records = new DoneRecords(async (batch: readonly DoneRecord[]) => {
    writes.push(batch.map((record) => record.effectKey));
    if (fail) throw new Error('store away');
  }, 40);
  return { records, writes };
}

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DoneRecords', () => {
  it('writes the records of effects claimed together once, when the last of them settled', async () => {
    const { records, writes } = recorder();
    records.together(['a', 'b', 'c']);
    const a = records.record('a', 1);
    const c = records.record('c', 3);
    await tick();
    expect(writes).toEqual([]);
    // b failed: it will never record, so a and c leave now.
    records.settled('b');
    await Promise.all([a, c]);
    expect(writes).toEqual([['a', 'c']]);
  });

  it('waits for the others at most its delay, then writes what it has; the late one is written alone', async () => {
    const { records, writes } = recorder();
    records.together(['a', 'b']);
    const a = records.record('a', 1);
    await a;
    expect(writes).toEqual([['a']]);
    await records.record('b', 2);
    expect(writes).toEqual([['a'], ['b']]);
  });

  it('writes at once a record of an effect claimed alone, and tells every waiter of a failed write', async () => {
    const { records, writes } = recorder(true);
    await expect(records.record('solo', 1)).rejects.toThrow('store away');
    records.together(['a', 'b']);
    const both = [records.record('a', 1), records.record('b', 2)];
    for (const written of both) await expect(written).rejects.toThrow('store away');
    // The group's write failed: each record is tried once more alone, so one refused record spares the others.
    expect(writes).toEqual([['solo'], ['a', 'b'], ['a'], ['b']]);
  });

  it('a key claimed again leaves its earlier group, which then no longer waits for it', async () => {
    const { records, writes } = recorder();
    records.together(['a', 'b']);
    const a = records.record('a', 1);
    records.together(['b']);
    await a;
    expect(writes).toEqual([['a']]);
    await records.record('b', 2);
    expect(writes).toEqual([['a'], ['b']]);
  });
});

describe('SameTurnBatches', () => {
  it('hands over the requests of one turn grouped by key, and rejects those a failing run left', async () => {
    const groups: string[][] = [];
    const batches = new SameTurnBatches<string, string>(async (group) => {
      groups.push(group.map((pending) => pending.request));
      if (group[0]?.request === 'boom') throw new Error('down');
      for (const pending of group) pending.resolve(pending.request.toUpperCase());
    });
    const answers = Promise.all([
      batches.add('job-1', 'a'),
      batches.add('job-2', 'x'),
      batches.add('job-1', 'b'),
    ]);
    expect(await answers).toEqual(['A', 'X', 'B']);
    expect(groups).toEqual([['a', 'b'], ['x']]);
    await expect(batches.add('job-3', 'boom')).rejects.toThrow('down');
    // The next turn is a new batch.
    expect(await batches.add('job-1', 'c')).toBe('C');
    expect(groups.at(-1)).toEqual(['c']);
  });
});
