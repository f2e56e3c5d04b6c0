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
 * cgroup v2's `cpu.max`, then v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us`, at the process's own cgroup
 * (/proc/self/cgroup) and at the mount's root (a container's own namespace shows its cgroup there).
 */
export function cgroupCpuQuota(read: ReadText = readText): number | null {
  const paths = cgroupPaths(read);
  const v2 = [...(paths.v2 !== undefined ? [join('/sys/fs/cgroup', paths.v2)] : []), '/sys/fs/cgroup'];
  for (const dir of v2) {
    const text = attempt(() => read(`${dir}/cpu.max`));
    if (text === undefined) continue;
    const [max, period] = text.trim().split(/\s+/);
    return max === 'max' ? null : ratio(max, period);
  }
  const v1Roots = ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct'];
  const v1 = v1Roots.flatMap((root) => [...(paths.v1 !== undefined ? [join(root, paths.v1)] : []), root]);
  for (const dir of v1) {
    const quota = attempt(() => read(`${dir}/cpu.cfs_quota_us`));
    if (quota === undefined) continue;
    if (Number(quota) < 0) return null;
    return ratio(
      quota,
      attempt(() => read(`${dir}/cpu.cfs_period_us`)),
    );
  }
  return null;
}

/** The process's cgroup paths: v2's (`0::/path`) and v1's cpu controller's (`N:cpu,cpuacct:/path`). */
function cgroupPaths(read: ReadText): { v2?: string; v1?: string } {
  const text = attempt(() => read('/proc/self/cgroup')) ?? '';
  const paths: { v2?: string; v1?: string } = {};
  for (const line of text.split('\n')) {
    const [id, controllers, path] = line.split(/:(.*?):/s, 3) as [string, string?, string?];
    if (path === undefined || !path.startsWith('/')) continue;
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

function join(root: string, path: string): string {
  return path === '/' ? root : `${root}${path}`;
}

function attempt(read: () => string): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
