// `npx tsx bench/notes-recall.ts`: what a similarity recall costs the worker at a run's start. In a MariaDB
// database of its own (af_bench_notes_*, dropped at the end), BENCH_NOTES (default 1,000) notes of one agent and
// tenant with embeddings of BENCH_NOTES_DIMENSIONS (default 1,536) are written through MysqlNoteStore; then the
// same query is recalled BENCH_NOTES_RECALLS times (default 20, after 3 unmeasured). Prints, and writes to
// bench/results/notes-recall-<time>.json, the recall's wall time and this process's CPU per recall (median and
// max), next to the exact cosine alone over the same vectors in memory. A benchmark: it asserts nothing.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { cosine } from '../src/notes/cosine.js';
import { MysqlNoteStore } from '../src/notes/notes-store.js';
import { migrate } from '../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../src/store/pool.js';

const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const NOTES = Number(process.env['BENCH_NOTES'] ?? 1_000);
const DIMENSIONS = Number(process.env['BENCH_NOTES_DIMENSIONS'] ?? 1_536);
const RECALLS = Number(process.env['BENCH_NOTES_RECALLS'] ?? 20);
const DATABASE = `af_bench_notes_${randomBytes(4).toString('hex')}`;

/** A deterministic unit-ish vector per note: a bench needs spread, not meaning. */
function vector(seed: number): number[] {
  let x = seed * 2654435761;
  return Array.from({ length: DIMENSIONS }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 30 - 1;
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const url = new URL(SERVER);
url.pathname = `/${DATABASE}`;
const pool = await createStorePool(url.toString(), { connectionLimit: 2, multipleStatements: true });
try {
  await migrate(pool);
  const store = new MysqlNoteStore(pool);
  const expiresAt = new Date(Date.now() + 86_400_000);
  const vectors = Array.from({ length: NOTES }, (_, i) => vector(i + 1));
  for (let start = 0; start < NOTES; start += 100) {
    await store.add(
      vectors.slice(start, start + 100).map((embedding, i) => ({
        agent: 'bench',
        tenant: '',
        kind: 'fact' as const,
        text: `note ${start + i}: the orders table has a column amount_usd`,
        sourceJobId: 'bench',
        sourceStep: 1,
        embedding,
        expiresAt,
      })),
    );
  }
  const query = { agent: 'bench', tenant: '', text: 'orders amount', embedding: vector(7), limit: 5 };
  for (let i = 0; i < 3; i++) await store.recall(query);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RECALLS; i++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await store.recall(query);
    wall.push(performance.now() - t0);
    const used = process.cpuUsage(cpu0);
    cpu.push((used.user + used.system) / 1000);
  }
  const cosineMs: number[] = [];
  for (let i = 0; i < RECALLS; i++) {
    const t0 = performance.now();
    for (const v of vectors) cosine(query.embedding, v);
    cosineMs.push(performance.now() - t0);
  }
  const report = {
    at: new Date().toISOString(),
    notes: NOTES,
    dimensions: DIMENSIONS,
    recalls: RECALLS,
    loadavg: loadavg(),
    recallWallMs: { median: median(wall), max: Math.max(...wall) },
    recallCpuMs: { median: median(cpu), max: Math.max(...cpu) },
    cosineOnlyMs: { median: median(cosineMs), max: Math.max(...cosineMs) },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(
    `bench/results/notes-recall-${report.at.replace(/:/g, '-')}.json`,
    `${JSON.stringify(report, null, 2)}\n`,
  );
} finally {
  await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`).catch(() => undefined);
  await pool.end();
}
