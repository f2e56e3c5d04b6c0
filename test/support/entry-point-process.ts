// A worker started with the image's own command line (the Dockerfile's CMD), in a process group of its own:
// signals go to the main process only, as Docker sends them to PID 1, and the test can still find and end
// anything the command left behind.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { REDIS_URL, type FleetNamespace } from './fleet-harness.js';

export interface EntryPointProcess {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether any process of its group still runs (an npm or tsx child that outlived the main process). */
  groupAlive(): boolean;
  /** Ends the whole group for good. */
  kill(): Promise<void>;
}

export function startEntryPoint(
  command: readonly string[],
  ns: FleetNamespace,
  env: Record<string, string>,
): EntryPointProcess {
  const [file, ...args] = command;
  // `node` in the image is Node 20, like the one running the tests.
  const executable = file === 'node' ? process.execPath : file!;
  const child = spawn(executable, args, {
    detached: true,
    stdio: 'pipe',
    env: {
      ...process.env,
      REDIS_URL,
      QUEUE_PREFIX: ns.prefix,
      MYSQL_URL: ns.mysqlUrl,
      OPENAI_API_KEY: 'test-key',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      ...env,
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const groupAlive = (): boolean => {
    try {
      process.kill(-child.pid!, 0);
      return true;
    } catch {
      return false;
    }
  };
  return {
    child,
    output: () => output,
    exited,
    groupAlive,
    async kill() {
      if (groupAlive()) process.kill(-child.pid!, 'SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await exited;
    },
  };
}
