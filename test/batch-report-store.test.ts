// The batch report against the real MariaDB/MySQL of MYSQL_URL's server, in a database of its own
// (af_test_breport_<random>) dropped at the end: the store reads a batch and its runs, and `scripts/report.ts`
// runs as a child process, as `npm run report` would. With no server every test fails, none is skipped.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentResult } from '../src/kernel/types.js';
import { buildBatchReport } from '../src/reports/batch-summary.js';
import { renderMarkdown } from '../src/reports/render-markdown.js';
import { BatchReportStore } from '../src/reports/report-store.js';
import { migrate } from '../src/store/migrate.js';
import { createStorePool, quoteIdentifier } from '../src/store/pool.js';
import { RunsRepository } from '../src/store/runs-repository.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER = process.env['MYSQL_URL'] || 'mysql://root@127.0.0.1:3306/agent_fleet';
const RUN_ID = randomBytes(4).toString('hex');
const DATABASE = `af_test_breport_${RUN_ID}`;
const BATCH = `nightly-${RUN_ID}:01`;
const HOSTILE_BATCH = `../../evil/${RUN_ID}`;

function databaseUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.href;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function report(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/report.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, MYSQL_URL: databaseUrl(DATABASE), LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function result(jobId: string, overrides: Partial<AgentResult> = {}): AgentResult {
  return {
    jobId,
    status: 'succeeded',
    stopReason: 'answer',
    answer: `The answer of ${jobId}`,
    steps: 3,
    toolCalls: 4,
    usage: { promptTokens: 3100, completionTokens: 420, totalTokens: 3520, costUsd: 0.0436 },
    error: null,
    ...overrides,
  };
}

let pool: Pool;
let outDir: string;

/** The jobs of BATCH: three finished, one running, one never started. */
const JOBS = ['j1', 'j2', 'j3', 'j4', 'j5'].map((id) => `${RUN_ID}-${id}`);
const RESULTS: AgentResult[] = [
  result(JOBS[0]!, { answer: '<script>alert("x")</script> Top 3: Ada, Bo, Cy' }),
  result(JOBS[1]!, {
    status: 'stopped',
    stopReason: 'cost_budget',
    answer: null,
    steps: 5,
    toolCalls: 7,
    usage: { promptTokens: 12_000, completionTokens: 1_234, totalTokens: 13_234, costUsd: 0.1234567891 },
  }),
  result(JOBS[2]!, {
    status: 'failed',
    stopReason: 'error',
    answer: null,
    steps: 1,
    toolCalls: 0,
    usage: { promptTokens: 900, completionTokens: 0, totalTokens: 900, costUsd: 0.0000000003 },
    error: {
      kind: 'model_api',
      code: 'http_500',
      message: 'the model endpoint answered 500',
      retryable: false,
    },
  }),
];
const EXPECTED_SUMMARY = {
  batchId: BATCH,
  tasks: 5,
  succeeded: 1,
  stopped: 1,
  failed: 1,
  usage: { promptTokens: 16_000, completionTokens: 1_654, totalTokens: 17_654, costUsd: 0.1670567894 },
};

async function insertBatch(batchId: string, jobIds: string[], maxCostUsd: number | null): Promise<void> {
  await pool.query(
    `INSERT INTO agent_batches (batch_id, name, tasks, job_ids, max_cost_usd, max_tokens, state, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'running', ?)`,
    [batchId, 'Nightly <b>reports</b>', jobIds.length, JSON.stringify(jobIds), maxCostUsd, null, new Date()],
  );
}

let setupError: unknown;

beforeAll(async () => {
  try {
    pool = await createStorePool(databaseUrl(DATABASE), { connectionLimit: 4, connectTimeout: 5_000 });
    await migrate(pool);
    outDir = await mkdtemp(join(tmpdir(), 'af-batch-report-'));
    const runs = new RunsRepository(pool);
    for (const [i, jobId] of JOBS.slice(0, 4).entries()) {
      await runs.startRun({
        jobId,
        task: `Report task ${i + 1}: revenue by region | Q${i + 1}`,
        model: 'gpt-4-turbo-preview',
        protocol: 'tools',
        batchId: BATCH,
        attempt: 1,
      });
    }
    for (const finished of RESULTS) await runs.finishRun(finished);
    await insertBatch(BATCH, JOBS, 0.5);
  } catch (error) {
    setupError = error;
  }
});

// A failed beforeAll only marks the tests skipped; rethrowing per test makes a missing server a failure.
beforeEach(() => {
  if (setupError !== undefined) throw setupError;
});

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
  if (pool) {
    await pool.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(DATABASE)}`);
    await pool.end();
  }
});

describe('BatchReportStore', () => {
  it('loads a batch and the runs of its tasks', async () => {
    const loaded = await new BatchReportStore(pool).loadBatch(BATCH);
    expect(loaded?.batch).toMatchObject({
      batchId: BATCH,
      name: 'Nightly <b>reports</b>',
      tasks: 5,
      jobIds: JOBS,
      maxCostUsd: 0.5,
      maxTokens: null,
      state: 'running',
      summary: null,
      completedAt: null,
    });
    expect(loaded?.runs.map((run) => run.jobId).sort()).toEqual(JOBS.slice(0, 4).sort());
    // DECIMAL(16,10) comes back as the number that was written.
    expect(loaded?.runs.find((run) => run.jobId === JOBS[1])?.costUsd).toBe(0.1234567891);
  });

  it("reads the runs' structured outputs back into the report's output columns", async () => {
    const batchId = `kpi-${RUN_ID}`;
    const jobIds = [`${batchId}-1`, `${batchId}-2`];
    const runs = new RunsRepository(pool);
    for (const jobId of jobIds) {
      await runs.startRun({ jobId, task: 'KPI', model: 'm', protocol: 'tools', batchId, attempt: 1 });
    }
    await runs.finishRun(result(jobIds[0]!, { output: { region: 'north', total: 12.5 } }));
    await runs.finishRun(
      result(jobIds[1]!, { status: 'stopped', stopReason: 'max_steps', answer: null, output: null }),
    );
    await insertBatch(batchId, jobIds, null);
    const loaded = (await new BatchReportStore(pool).loadBatch(batchId))!;
    const markdown = renderMarkdown(buildBatchReport(loaded.batch, loaded.runs));
    expect(markdown).toContain('| # | Job | region | total |');
    expect(markdown).toContain(`| 1 | ${jobIds[0]} | north | 12.5 |`);
    expect(markdown).toContain(`| 2 | ${jobIds[1]} | — (no output) |`);
  });

  it('finds no batch by an unknown or impossible id', async () => {
    const store = new BatchReportStore(pool);
    expect(await store.loadBatch(`missing-${RUN_ID}`)).toBeNull();
    expect(await store.loadBatch('é')).toBeNull();
    expect(await store.getReport(`missing-${RUN_ID}`)).toBeNull();
  });
});

describe('npm run report', () => {
  it('prints the report, writes the Markdown, HTML and SVG files and records the report', async () => {
    const run = await report(['--batch', BATCH, '--out', outDir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);

    // stdout: the table (one line per task), the totals, and the summary JSON last.
    expect(run.stdout).toContain(`Batch ${BATCH} "Nightly <b>reports</b>": running, 3 of 5 tasks finished`);
    expect(run.stdout).toContain('Tasks:     5 (1 succeeded, 1 stopped, 1 failed, 1 running, 1 pending)');
    expect(run.stdout).toContain('Tokens:    17,654 total (16,000 prompt, 1,654 completion)');
    expect(run.stdout).toContain('Cost:      $0.1670567894 (33.4% of the $0.50 budget)');
    for (const jobId of JOBS) expect(run.stdout).toContain(jobId);
    const lines = run.stdout.trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1) ?? '')).toEqual(EXPECTED_SUMMARY);

    // The files, named after the batch id.
    expect((await readdir(outDir)).sort()).toEqual([`${BATCH}.html`, `${BATCH}.md`, `${BATCH}.svg`]);
    const markdown = await readFile(join(outDir, `${BATCH}.md`), 'utf8');
    const html = await readFile(join(outDir, `${BATCH}.html`), 'utf8');
    const svg = await readFile(join(outDir, `${BATCH}.svg`), 'utf8');
    expect(markdown).toContain('| Cost (USD) | **$0.1670567894** |');
    expect(markdown).toContain(`(${encodeURIComponent(`${BATCH}.svg`)})`);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(html).toContain(svg.trim());
    expect(svg.startsWith('<svg')).toBe(true);

    // batch_reports holds what was written.
    const stored = await new BatchReportStore(pool).getReport(BATCH);
    expect(stored).toMatchObject({
      batchId: BATCH,
      state: 'running',
      summary: EXPECTED_SUMMARY,
      markdown,
      html,
    });
  });

  it('replaces the stored report when run again, keeping one row per batch', async () => {
    const store = new BatchReportStore(pool);
    const first = await store.getReport(BATCH);
    expect(first).not.toBeNull();
    // The last task finishes in between.
    const runs = new RunsRepository(pool);
    await runs.startRun({
      jobId: JOBS[4]!,
      task: 'late task',
      model: 'm',
      protocol: 'json',
      batchId: BATCH,
      attempt: 1,
    });
    await runs.finishRun(
      result(JOBS[4]!, {
        usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3, costUsd: 0.0000000007 },
      }),
    );
    await runs.finishRun(
      result(JOBS[3]!, { usage: { promptTokens: 10, completionTokens: 20, totalTokens: 30, costUsd: 0.5 } }),
    );

    const run = await report(['--batch', BATCH, `--out=${outDir}`]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Tasks:     5 (3 succeeded, 1 stopped, 1 failed, 0 running, 0 pending)');
    const second = await store.getReport(BATCH);
    expect(second?.state).toBe('completed');
    expect(second?.summary).toEqual({
      ...EXPECTED_SUMMARY,
      succeeded: 3,
      usage: { promptTokens: 16_011, completionTokens: 1_676, totalTokens: 17_687, costUsd: 0.6670567901 },
    });
    expect(second?.createdAt.getTime()).toBe(first?.createdAt.getTime());
    expect(second!.updatedAt.getTime()).toBeGreaterThanOrEqual(first!.updatedAt.getTime());
    const [rows] = await pool.query<RowDataPacket[]>(
      'SELECT COUNT(*) AS n FROM batch_reports WHERE batch_id = ?',
      [BATCH],
    );
    expect(Number(rows[0]?.['n'])).toBe(1);
    expect(await readFile(join(outDir, `${BATCH}.md`), 'utf8')).toBe(second?.markdown);
  });

  it('keeps the files of a batch id with path characters inside --out', async () => {
    await insertBatch(HOSTILE_BATCH, [], null);
    const dir = await mkdtemp(join(tmpdir(), 'af-batch-report-evil-'));
    try {
      const run = await report(['--batch', HOSTILE_BATCH, '--out', dir]);
      expect(run.code).toBe(0);
      const files = await readdir(dir);
      expect(files).toHaveLength(3);
      for (const file of files) expect(file).not.toContain('/');
      expect(run.stdout).toContain('Tasks:     0 (0 succeeded');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 with one line for an unknown batch, writing nothing', async () => {
    const dir = join(outDir, 'unknown');
    const run = await report(['--batch', `no-such-batch-${RUN_ID}`, '--out', dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`no batch "no-such-batch-${RUN_ID}"`);
    await expect(readdir(dir)).rejects.toThrow(/ENOENT/);
  });

  it('exits 2 on bad arguments', async () => {
    const cases = [[], ['--batch'], ['--batch', BATCH, '--colour'], ['--batch', BATCH, 'extra']];
    const runs = await Promise.all(cases.map((args) => report(args)));
    for (const [i, run] of runs.entries()) {
      expect(run.code, cases[i]?.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/^report: .*usage: npm run report -- --batch ID \[--out DIR\]\)\n$/);
    }
  });
});
