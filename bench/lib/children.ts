// Child processes of the benchmark: every one is registered, so a failing or interrupted run still kills
// them all (by pid, each one it started).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The last 64 KB of stdout and stderr. */
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`. Resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<Child>();

export function spawnChild(
  name: string,
  args: string[],
  env: Record<string, string>,
  options: { ipc?: boolean; cwd?: string } = {},
): Child {
  const proc = spawn(process.execPath, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 65_536) output = output.slice(-65_536);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const alive = () => proc.exitCode === null && proc.signalCode === null;
  const child: Child = {
    name,
    process: proc,
    pid: proc.pid,
    output: () => output,
    exited,
    alive,
    async stop(graceMs = 5_000) {
      if (alive()) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => {
          if (alive()) proc.kill('SIGKILL');
        }, graceMs);
        await exited;
        clearTimeout(timer);
      }
      running.delete(child);
    },
  };
  running.add(child);
  void exited.then(() => running.delete(child));
  return child;
}

/** Kills whatever is still running; safe to call more than once. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((child) => child.stop(3_000)));
}

/** Kills synchronously (for process exit handlers). */
export function killAllChildrenNow(): void {
  for (const child of running) if (child.alive()) child.process.kill('SIGKILL');
}

/** The first IPC message of `type`, or an error when the child exits or the time is up first. */
export function nextMessage<T extends { type: string }>(
  child: Child,
  type: string,
  timeoutMs = 30_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if ((message as { type?: unknown } | null)?.type !== type) return;
      cleanup();
      resolve(message as T);
    };
    const onExit = () => {
      cleanup();
      reject(new Error(`${child.name} exited before sending '${type}'. Output:\n${child.output()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${child.name} sent no '${type}' within ${timeoutMs} ms. Output:\n${child.output()}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.process.off('message', onMessage);
      child.process.off('exit', onExit);
    };
    child.process.on('message', onMessage);
    child.process.once('exit', onExit);
  });
}
