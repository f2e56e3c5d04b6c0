// Counts exactly the Redis commands the agent worker sends per step: scenario 3 (`bench/run.ts`, BENCH_ONLY=3) run
// against a redis-server of its own, every command seen through MONITOR, and those from the worker process's
// sockets (found with `ss -tnp` while it runs) counted by command and script. Usage, from the repository:
//   npx tsx bench/redis-commands.ts          (BENCH_* variables pass through; BENCH_REPETITIONS defaults to 1)
// BENCH_REDIS_SCENARIO=4 counts scenario 4 instead (the model answering after BENCH_LATENCY_MS, as many jobs in
// flight as BENCH_LATENCY_CONCURRENCY), where the steps of many jobs end in the same turns as in production.
// The scenario's results file is written as usual; the counts are printed, not kept.
import { spawn, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { startPrivateRedis } from './lib/private-redis.js';

const scenario = process.env.BENCH_REDIS_SCENARIO === '4' ? '4' : '3';
const redis = await startPrivateRedis();
const port = new URL(redis.url).port;
const monitor = await redis.monitor();
const workerSockets = new Set<string>();

/** The agent workers this checkout started (their cwd is ours). */
function workerPids(): string[] {
  return readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return (
        cmdline.includes('workers/agent-worker.ts') && readlinkSync(`/proc/${pid}/cwd`) === process.cwd()
      );
    } catch {
      return false;
    }
  });
}

function noteWorkerSockets(): void {
  const pids = new Set(workerPids());
  if (pids.size === 0) return;
  const lines = execFileSync('ss', ['-tnpH', 'dst', `127.0.0.1:${port}`], { encoding: 'utf8' }).split('\n');
  for (const line of lines) {
    const pid = /pid=(\d+),/.exec(line)?.[1];
    const local = line.trim().split(/\s+/)[3];
    if (pid && local && pids.has(pid)) workerSockets.add(local);
  }
}

const poll = setInterval(noteWorkerSockets, 250);
const bench = spawn('npx', ['tsx', 'bench/run.ts'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: {
    ...process.env,
    REDIS_URL: redis.url,
    BENCH_ONLY: scenario,
    BENCH_REPETITIONS: process.env.BENCH_REPETITIONS ?? '1',
  },
});
let output = '';
bench.stdout.on('data', (chunk: Buffer) => {
  output += chunk.toString();
  process.stdout.write(chunk);
});
const code = await new Promise<number | null>((resolve) => bench.once('exit', resolve));
clearInterval(poll);
await monitor.stop();
await redis.close();
if (code !== 0) throw new Error(`the benchmark failed (exit ${code})`);

const resultsFile = /results in (bench\/results\/\S+\.json)/.exec(output)?.[1];
if (!resultsFile) throw new Error('no results file named in the benchmark output');
const { config } = JSON.parse(readFileSync(resultsFile, 'utf8')) as {
  config: {
    steps: { tasks: number; warmupTasks: number; steps: number; repetitions: number };
    latency: { jobs: number; warmupJobs: number; steps: number; repetitions: number };
  };
};
const s = config.steps;
const l = config.latency;
const steps =
  scenario === '4'
    ? (l.warmupJobs + l.jobs * l.repetitions) * l.steps
    : (s.warmupTasks + s.tasks * s.repetitions) * s.steps;
const byCommand: Record<string, number> = {};
for (const [source, counts] of monitor.byClient) {
  if (!workerSockets.has(source)) continue;
  for (const [name, n] of Object.entries(counts)) byCommand[name] = (byCommand[name] ?? 0) + n;
}
const total = Object.values(byCommand).reduce((a, b) => a + b, 0);
console.log(
  `\nRedis commands the worker sent: ${total} over ${steps} steps = ${(total / steps).toFixed(2)} per step`,
);
for (const [name, n] of Object.entries(byCommand)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 20))
  console.log(`${(n / steps).toFixed(3).padStart(7)}  ${name}`);
