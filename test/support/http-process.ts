// Runs `npm run api` or `npm run board` as the process it is (tsx, its own environment, port 0) until its
// "listening" log line, which says where it listens.
import { spawn, type ChildProcess } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { connect } from 'node:net';

export interface RunningHttpProcess {
  /** The JSON log line saying it listens: host, port, msg. */
  listening: { host: string; port: number; msg: string };
  stop(): Promise<number | null>;
}

export async function startHttpProcess(
  script: string,
  env: Record<string, string>,
  listeningPattern: RegExp,
): Promise<RunningHttpProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = await new Promise<RunningHttpProcess['listening']>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not listen:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of output.split('\n')) {
        if (!listeningPattern.test(line)) continue;
        clearTimeout(timer);
        resolve(JSON.parse(line) as RunningHttpProcess['listening']);
        return;
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited ${code}:\n${output}`));
    });
  });
  return {
    listening,
    stop: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** A non-loopback IPv4 address of this machine, if it has one. */
export function externalIPv4(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((address) => address?.family === 'IPv4' && !address.internal)?.address;
}

/** Whether a TCP connection to host:port is accepted. */
export function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(2_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
