// `--processes auto` on a machine whose cgroup limits the CPU: held to the quota (Node 20's
// availableParallelism() counts the host's cores), whichever cgroup version and wherever it shows.
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cgroupCpuQuota, usableCores, type ReadText } from '../../../src/util/usable-cores.js';

/** A file system of these files only; any other path is missing. */
const files =
  (entries: Record<string, string>): ReadText =>
  (path) => {
    const text = entries[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return text;
  };

describe('usableCores', () => {
  it('cgroup v2 in its own namespace: 2 CPUs of a 32-core host give 2', () => {
    const read = files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '200000 100000\n' });
    expect(usableCores(read, 32)).toBe(2);
  });

  it('cgroup v2 at the process’s own path; a fraction rounds up; never more than the cores', () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods/pod1/c1\n',
      '/sys/fs/cgroup/kubepods/pod1/c1/cpu.max': '150000 100000',
    });
    expect(usableCores(read, 32)).toBe(2);
    expect(usableCores(read, 1)).toBe(1);
    expect(
      usableCores(files({ '/proc/self/cgroup': '0::/', '/sys/fs/cgroup/cpu.max': '10000 100000' }), 8),
    ).toBe(1);
  });

  it('a cgroup path with colons of its own is read whole', () => {
    const read = files({
      '/proc/self/cgroup': '0::/system.slice/a:b:c.scope\n',
      '/sys/fs/cgroup/system.slice/a:b:c.scope/cpu.max': '100000 100000',
    });
    expect(usableCores(read, 8)).toBe(1);
  });

  it('a parent group’s quota limits a process whose own group has none', () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods/pod1/c1\n',
      '/sys/fs/cgroup/kubepods/pod1/c1/cpu.max': 'max 100000',
      '/sys/fs/cgroup/kubepods/pod1/cpu.max': '400000 100000',
      '/sys/fs/cgroup/kubepods/cpu.max': '800000 100000',
    });
    expect(usableCores(read, 32)).toBe(4);
  });

  it('no quota (max), or no cgroup file at all: the cores', () => {
    expect(
      usableCores(files({ '/proc/self/cgroup': '0::/', '/sys/fs/cgroup/cpu.max': 'max 100000' }), 8),
    ).toBe(8);
    expect(usableCores(files({}), 8)).toBe(8);
    expect(cgroupCpuQuota(files({}))).toBeNull();
  });

  it('cgroup v1: the cpu controller’s quota and period, at its path or at the root; -1 is none', () => {
    const v1 = files({
      '/proc/self/cgroup': '4:memory:/docker/abc\n1:cpu,cpuacct:/docker/abc\n0::/\n',
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '300000\n',
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    });
    expect(usableCores(v1, 16)).toBe(3);
    const unlimited = files({
      '/proc/self/cgroup': '1:cpu:/\n',
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
    });
    expect(usableCores(unlimited, 16)).toBe(16);
  });

  it('garbage in the files is no quota, not a crash', () => {
    const read = files({ '/proc/self/cgroup': 'nonsense', '/sys/fs/cgroup/cpu.max': 'lots of it' });
    expect(usableCores(read, 4)).toBe(4);
  });

  it('on this machine: at least 1, at most its cores', () => {
    const cores = usableCores();
    expect(cores).toBeGreaterThanOrEqual(1);
    expect(cores).toBeLessThanOrEqual(availableParallelism());
  });
});
