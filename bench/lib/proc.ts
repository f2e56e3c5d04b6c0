// What the kernel knows about a process: CPU time (utime + stime of all its threads, /proc/<pid>/stat) and
// resident memory (/proc/<pid>/status). Linux only.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticks: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`), the unit of utime and stime. */
export function clockTicksPerSecond(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** CPU milliseconds the process has used so far (user + system). */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / clockTicksPerSecond();
}

/**
 * CPU milliseconds of this process's children that have exited and been reaped so far (cutime + cstime of
 * /proc/self/stat: the kernel adds a child's whole life, its own reaped children included, when it is waited
 * for). Read around one child's exit, with no other child exiting meanwhile, it is that child's CPU from start
 * to exit, its last moments included, which /proc/<pid>/stat can no longer show.
 */
export function reapedChildrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / clockTicksPerSecond();
}

/** CPU milliseconds of the process's main thread alone (/proc/<pid>/task/<pid>/stat), its other threads out. */
export function mainThreadCpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond();
}

/** Resident set size in KB (VmRSS). */
export function rssKbOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return match ? Number(match[1]) : NaN;
}

/** Pids of running processes whose command name is one of `names` (read-only: used to sample servers). */
export function pidsByComm(names: readonly string[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (names.includes(readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The process and every process below it (a supervisor and its workers), from each one's parent pid. */
export function selfAndDescendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++) {
    for (const [child, parent] of parents) if (parent === found[i]) found.push(child);
  }
  return found;
}

/** CPU ms of a set of processes; those that vanished count as 0. */
export function cpuMsOfAll(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      total += cpuMsOf(pid);
    } catch {
      // gone
    }
  }
  return total;
}

/**
 * Read and write system calls the process has made so far (syscr + syscw of /proc/<pid>/io, all threads):
 * a count, not a time, so it does not move with the machine's load. Every socket read or write is one.
 */
export function syscallsOf(pid: number | 'self'): {
  reads: number;
  writes: number;
  /** Bytes those calls read and wrote (rchar, wchar): sockets and files alike. */
  readBytes: number;
  writtenBytes: number;
} {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(io)?.[1] ?? NaN);
  return {
    reads: field('syscr'),
    writes: field('syscw'),
    readBytes: field('rchar'),
    writtenBytes: field('wchar'),
  };
}

/**
 * CPU milliseconds the whole machine has been busy so far, summed over its cores (/proc/stat: every state but
 * idle and iowait). Over a batch, busy / elapsed is how many cores were in use, by anything.
 */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return (
    (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) /
    clockTicksPerSecond()
  );
}
