// What a worker process costs before it takes its first job: CPU (utime + stime, /proc/<pid>/stat, all its
// threads, and separately its child processes) from spawn to the "worker started" log line, the variants
// alternated. One store for all: the first start (not counted) migrates it, the others find it migrated, as a
// restarted worker does. Prints a JSON summary; keeps no file.
//   npx tsx bench/worker-startup.ts            # tsx (node --import tsx workers/agent-worker.ts) against dist/
//   BENCH_STARTUP_ROUNDS=5 BENCH_STARTUP_VARIANTS=tsx,dist npx tsx bench/worker-startup.ts
// A variant named `…+cache` (tsx+cache, dist+cache) starts with NODE_COMPILE_CACHE set to a directory of its own
// (V8's code cache on disk, Node 22.1 and later; Node 20 ignores it), filled by a start that is not counted.
// dist/ must be built first (`npm run build`).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnChild, REPO_ROOT } from './lib/children.js';
import { createNamespace, log, REDIS_URL, sleep } from './lib/fleet.js';
import { cpuMsOf, cpuMsOfAll, selfAndDescendants } from './lib/proc.js';
import { median } from './lib/stats.js';
import { WORKER_NODE_FLAGS } from '../src/worker/worker-node-flags.js';
import { seedPrivateData } from './scenarios/real-tools.js';

const rounds = Number(process.env.BENCH_STARTUP_ROUNDS ?? 5);
const nodeArgs = (process.env.BENCH_STARTUP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const variants = (process.env.BENCH_STARTUP_VARIANTS ?? 'tsx,dist').split(',').map((s) => s.trim());
const entry: Record<string, string[]> = {
  tsx: ['--import', 'tsx', 'workers/agent-worker.ts'],
  dist: ['dist/workers/agent-worker.js'],
};
const baseOf = (variant: string) => variant.replace(/\+cache$/, '');
const compileCache = mkdtempSync(join(tmpdir(), 'af-bench-compile-cache-'));
if (
  variants.some((v) => baseOf(v) === 'dist') &&
  !existsSync(join(REPO_ROOT, 'dist/workers/agent-worker.js'))
)
  throw new Error('dist/workers/agent-worker.js is missing: npm run build');

const data = await seedPrivateData('startup');

const ns = createNamespace('startup', true);

async function start(variant: string) {
  const t0 = performance.now();
  const args = [...WORKER_NODE_FLAGS, ...nodeArgs, ...entry[baseOf(variant)]!];
  const child = spawnChild(`worker(${variant})`, args, {
    REDIS_URL,
    QUEUE_PREFIX: ns.prefix,
    MYSQL_URL: ns.mysqlUrl,
    // The data database of scenario 7 (its read-only account), so the demo's is not looked for or seeded.
    DATA_MYSQL_URL: data.url,
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    OPENAI_API_KEY: 'bench-key',
    WORKER_CONCURRENCY: '10',
    AGENT_PROTOCOL: 'tools',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    ...(variant.endsWith('+cache') ? { NODE_COMPILE_CACHE: join(compileCache, baseOf(variant)) } : {}),
  });
  // Descendants (tsx's esbuild service, if any) are sampled while they live: their last reading counts.
  const others = new Map<number, number>();
  try {
    while (!/worker started/.test(child.output())) {
      if (!child.alive()) throw new Error(`worker exited:\n${child.output()}`);
      if (performance.now() - t0 > 60_000) throw new Error(`no start in 60 s:\n${child.output()}`);
      for (const pid of selfAndDescendants(child.pid).slice(1)) others.set(pid, cpuMsOfAll([pid]));
      await sleep(5);
    }
    const cpuMs = cpuMsOf(child.pid);
    for (const pid of selfAndDescendants(child.pid).slice(1)) others.set(pid, cpuMsOfAll([pid]));
    return {
      cpuMs,
      childrenCpuMs: [...others.values()].reduce((a, b) => a + b, 0),
      wallMs: performance.now() - t0,
    };
  } finally {
    await child.stop(10_000);
  }
}

const results: Record<string, { cpuMs: number[]; childrenCpuMs: number[]; wallMs: number[] }> = {};
for (const v of variants) results[v] = { cpuMs: [], childrenCpuMs: [], wallMs: [] };
await start(variants[0]!); // the page cache and the server's first connections, for all variants alike
for (const v of variants.filter((v) => v.endsWith('+cache'))) await start(v); // fills its code cache
for (let round = 0; round < rounds; round++) {
  for (const v of round % 2 ? [...variants].reverse() : variants) {
    const r = await start(v);
    results[v]!.cpuMs.push(r.cpuMs);
    results[v]!.childrenCpuMs.push(r.childrenCpuMs);
    results[v]!.wallMs.push(r.wallMs);
    log(
      `${v}: ${r.cpuMs.toFixed(0)} ms CPU (+${r.childrenCpuMs.toFixed(0)} in children), ${r.wallMs.toFixed(0)} ms`,
    );
  }
}
const summary = Object.fromEntries(
  Object.entries(results).map(([v, r]) => [
    v,
    {
      cpuMsMedian: median(r.cpuMs),
      cpuMsRange: [Math.min(...r.cpuMs), Math.max(...r.cpuMs)],
      childrenCpuMsMedian: median(r.childrenCpuMs),
      wallMsMedian: Math.round(median(r.wallMs)),
      cpuMs: r.cpuMs,
    },
  ]),
);
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
await data.cleanup();
await ns.cleanup();
rmSync(compileCache, { recursive: true, force: true });
process.exit(0);
