// What is left of a worker started in a session of its own (spawn's `detached`) once its main process has
// exited: an npm or tsx wrapper that never passed the signal on would still be there, holding jobs.
import { execFileSync } from 'node:child_process';

/** The command lines of the processes still in the session led by `leaderPid`. */
export function sessionMembers(leaderPid: number): string[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '-s', String(leaderPid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  } catch {
    // ps exits 1 when nothing matches.
    return [];
  }
}

/** Waits until the session is empty, for at most `timeoutMs`; returns what is still running then. */
export async function sessionLeftovers(leaderPid: number, timeoutMs = 5_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const members = sessionMembers(leaderPid);
    if (members.length === 0 || Date.now() > deadline) return members;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
