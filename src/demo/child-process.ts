// A process of the fleet started by the demo: its output goes to a log file, and the demo can wait for a
// line that says it is ready, and stop it the way an operator would (SIGTERM, then SIGKILL if it hangs).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export interface FleetProcess {
  name: string;
  logFile: string;
  /** Resolves with the match once the output has a line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(timeoutMs?: number): Promise<number | null>;
}

export function startFleetProcess(
  name: string,
  entry: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
): FleetProcess {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', entry], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile, { flags: 'a' });
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    log.write(chunk);
    // Only the recent output matters for readiness; keep memory bounded on long runs.
    output = (output + chunk.toString()).slice(-20_000);
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  return {
    name,
    logFile,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) {
            cleanup();
            resolve(match);
          } else if (child.exitCode !== null) {
            cleanup();
            reject(
              new Error(
                `${name} exited with code ${child.exitCode}; see ${logFile}:\n${output.slice(-2_000)}`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${name} was not ready within ${timeoutMs} ms; see ${logFile}`));
        }, timeoutMs);
        const onExit = () => check();
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('exit', onExit);
        };
        waiters.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop(timeoutMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      log.end();
      return code;
    },
  };
}
