// How many cores this process may use, for `--processes auto`: os.availableParallelism(), held to the CPU quota
// of the process's cgroup. Node 20's libuv (1.46) does not read the quota (libuv 1.49.1 does, in Node 24): a
// container limited to 2 CPUs on a 32-core host would otherwise start 32 workers, each with its own pools.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export type ReadText = (path: string) => string;

const readText: ReadText = (path) => readFileSync(path, 'utf8');

export function usableCores(read: ReadText = readText, cores: number = availableParallelism()): number {
  const quota = cgroupCpuQuota(read);
  return quota === null ? cores : Math.max(1, Math.min(cores, Math.ceil(quota)));
}

/**
 * The CPUs the process's cgroup may use (quota over period), or null when it has no quota or none can be read:
 * cgroup v2's `cpu.max`, else v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us`, the smallest along the process's
 * cgroup (/proc/self/cgroup) and its parents up to the mount's root (a container's own namespace shows its cgroup
 * there). A parent's quota limits its children: the process's own group may say `max` under one.
 */
export function cgroupCpuQuota(read: ReadText = readText): number | null {
  const paths = cgroupPaths(read);
  const v2 = smallest(
    ancestors('/sys/fs/cgroup', paths.v2).map((dir) => {
      const text = attempt(() => read(`${dir}/cpu.max`));
      if (text === undefined) return undefined;
      const [max, period] = text.trim().split(/\s+/);
      return max === 'max' ? null : ratio(max, period);
    }),
  );
  if (v2 !== undefined) return v2;
  const v1 = smallest(
    ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct'].flatMap((root) =>
      ancestors(root, paths.v1).map((dir) => {
        const quota = attempt(() => read(`${dir}/cpu.cfs_quota_us`));
        if (quota === undefined) return undefined;
        return Number(quota) < 0
          ? null
          : ratio(
              quota,
              attempt(() => read(`${dir}/cpu.cfs_period_us`)),
            );
      }),
    ),
  );
  return v1 ?? null;
}

/** `root` + the path, then each parent of it, then `root` itself. */
function ancestors(root: string, path: string | undefined): string[] {
  const parts = (path ?? '/').split('/').filter(Boolean);
  return parts.map((_, i) => `${root}/${parts.slice(0, parts.length - i).join('/')}`).concat(root);
}

/**
 * Of the groups' quotas (undefined: no such file; null: no quota), the smallest; null when some group was read
 * and none has a quota; undefined when none was read.
 */
function smallest(quotas: (number | null | undefined)[]): number | null | undefined {
  const read = quotas.filter((q): q is number | null => q !== undefined);
  if (read.length === 0) return undefined;
  const limits = read.filter((q): q is number => q !== null);
  return limits.length > 0 ? Math.min(...limits) : null;
}

/** The process's cgroup paths: v2's (`0::/path`) and v1's cpu controller's (`N:cpu,cpuacct:/path`). */
function cgroupPaths(read: ReadText): { v2?: string; v1?: string } {
  const text = attempt(() => read('/proc/self/cgroup')) ?? '';
  const paths: { v2?: string; v1?: string } = {};
  for (const line of text.split('\n')) {
    // `id:controllers:path`, where the path may hold colons of its own.
    const [, id, controllers, path] = /^(\d+):([^:]*):(\/.*)$/s.exec(line) ?? [];
    if (path === undefined) continue;
    if (id === '0' && controllers === '') paths.v2 = path;
    else if (controllers?.split(',').includes('cpu')) paths.v1 = path;
  }
  return paths;
}

function ratio(quota: string | undefined, period: string | undefined): number | null {
  const q = Number(quota);
  const p = Number(period);
  return Number.isFinite(q) && q > 0 && Number.isFinite(p) && p > 0 ? q / p : null;
}

function attempt(read: () => string): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
