// `npm run report -- --batch ID [--out DIR]`: prints the batch report, writes it as Markdown,
// HTML and SVG under DIR (default reports/), and records it in batch_reports. Exit codes: 0 done, 1 no such
// batch or the store or the files failed (one line on stderr), 2 bad arguments.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { RowDataPacket } from 'mysql2/promise';
import { migrate } from '../store/migrate.js';
import { parseMysqlUrl } from '../store/mysql-url.js';
import { createStorePool } from '../store/pool.js';
import { createReadPool, readStoreOf, type ReadStoreConfig } from '../store/read-pool.js';
import { buildBatchReport, type BatchReport } from './batch-summary.js';
import { renderBatchChart } from './render-chart.js';
import { renderHtml } from './render-html.js';
import { renderMarkdown } from './render-markdown.js';
import { renderText } from './render-text.js';
import { BATCH_ID_PATTERN, BatchReportStore } from './report-store.js';
import { terminalSafe } from './text.js';

export const USAGE = 'usage: npm run report -- --batch ID [--out DIR]';
export const DEFAULT_OUT_DIR = 'reports';

export type ReportArgs =
  { kind: 'run'; batchId: string; outDir: string } | { kind: 'help' } | { kind: 'error'; message: string };

export function parseReportArgs(argv: readonly string[]): ReportArgs {
  let values: { batch?: string | undefined; out?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { batch: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { kind: 'error', message: error instanceof Error ? error.message : String(error) };
  }
  if (values.help) return { kind: 'help' };
  const batchId = values.batch;
  if (batchId === undefined || batchId === '') return { kind: 'error', message: '--batch ID is required' };
  if (!BATCH_ID_PATTERN.test(batchId)) {
    return { kind: 'error', message: '--batch must be 1-64 printable ASCII characters, as batch ids are' };
  }
  if (values.out === '') return { kind: 'error', message: '--out must name a directory' };
  return { kind: 'run', batchId, outDir: values.out ?? DEFAULT_OUT_DIR };
}

/**
 * The file name of a batch's report, without extension: the batch id itself when it is a safe file name
 * (letters, digits and `._:+=@-`, not starting with `.` or `-`), else the id with every other character
 * replaced by `_` and a hash of the id appended, so two ids never share a file and none escapes DIR.
 */
export function reportFileStem(batchId: string): string {
  if (/^[A-Za-z0-9_][A-Za-z0-9._:+=@-]*$/.test(batchId)) return batchId;
  const hash = createHash('sha256').update(batchId).digest('hex').slice(0, 8);
  const cleaned = batchId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '_');
  return `${cleaned}-${hash}`;
}

export interface ReportFiles {
  markdown: string;
  html: string;
  svg: string;
}

export interface RenderedReport {
  report: BatchReport;
  text: string;
  markdown: string;
  html: string;
  svg: string;
}

/** Everything the command outputs, from the batch's report: pure. */
export function renderReport(report: BatchReport): RenderedReport {
  const svg = renderBatchChart(report);
  return {
    report,
    text: renderText(report),
    markdown: renderMarkdown(report, { chartFile: `${reportFileStem(report.batchId)}.svg` }),
    html: renderHtml(report, { chartSvg: svg }),
    svg,
  };
}

/** Writes the three files; each appears whole or not at all (written aside, then renamed). */
export async function writeReportFiles(outDir: string, rendered: RenderedReport): Promise<ReportFiles> {
  await mkdir(outDir, { recursive: true });
  const stem = reportFileStem(rendered.report.batchId);
  const files: ReportFiles = {
    markdown: join(outDir, `${stem}.md`),
    html: join(outDir, `${stem}.html`),
    svg: join(outDir, `${stem}.svg`),
  };
  await Promise.all([
    writeAtomically(files.markdown, rendered.markdown),
    writeAtomically(files.html, rendered.html),
    writeAtomically(files.svg, rendered.svg),
  ]);
  return files;
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, text, 'utf8');
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

export interface ReportCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Runs the command; resolves to its exit code. Only an unexpected error (a bug, the store failing) throws. */
export async function runReportCommand(
  argv: readonly string[],
  /** MYSQL_URL, or the environment: the batch is read from MYSQL_READ_URL when set, the report written to MYSQL_URL. */
  mysqlUrl: () => string | ReadStoreConfig,
  io: ReportCommandIo,
): Promise<number> {
  const args = parseReportArgs(argv);
  if (args.kind === 'help') {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (args.kind === 'error') {
    io.stderr(`report: ${args.message} (${USAGE})\n`);
    return 2;
  }
  const config = mysqlUrl();
  const primaryUrl = typeof config === 'string' ? config : config.MYSQL_URL;
  const read = readStoreOf(config);
  const pool = await createStorePool(primaryUrl, { connectionLimit: 2 });
  // The batch, its runs and effects read from the replica when there is one; the report is written to MYSQL_URL.
  const readPool = read.replica
    ? await createReadPool(config, { connectionLimit: 2 }).catch(async (error: unknown) => {
        await pool.end().catch(() => undefined);
        throw error;
      })
    : pool;
  try {
    await migrate(pool);
    const store = new BatchReportStore(pool);
    let loaded = await new BatchReportStore(readPool).loadBatch(args.batchId);
    // The report is recorded on the primary: a replica behind it (the batch not there yet, or still running there
    // when the primary has it completed) would replace the aggregator's report of the completed batch with a stale
    // one. Its state on the primary, one row by key, says; when they differ the batch is read from the primary.
    if (readPool !== pool && loaded?.batch.state !== 'completed') {
      const [rows] = await pool.query<RowDataPacket[]>('SELECT state FROM agent_batches WHERE batch_id = ?', [
        args.batchId,
      ]);
      const primaryState = rows[0]?.['state'] as string | undefined;
      if (primaryState !== undefined && primaryState !== loaded?.batch.state) {
        io.stderr(
          `report: MYSQL_READ_URL is behind MYSQL_URL for batch ${JSON.stringify(terminalSafe(args.batchId))} ` +
            `(${loaded ? loaded.batch.state : 'missing'} there, ${primaryState} on MYSQL_URL): read from MYSQL_URL\n`,
        );
        loaded = await store.loadBatch(args.batchId);
      }
    }
    if (loaded === null) {
      const { database, redacted } = parseMysqlUrl(read.url);
      io.stderr(
        `report: no batch ${JSON.stringify(terminalSafe(args.batchId))} in agent_batches of ${database} (${read.variable}=${redacted})\n`,
      );
      return 1;
    }
    const report = buildBatchReport(loaded.batch, loaded.runs, {
      emails: loaded.emails,
      approvals: loaded.approvals,
    });
    const rendered = renderReport(report);
    io.stdout(rendered.text);
    const files = await writeReportFiles(args.outDir, rendered);
    await store.saveReport({
      batchId: report.batchId,
      state: report.state,
      summary: report.summary,
      markdown: rendered.markdown,
      html: rendered.html,
    });
    io.stdout(
      `\nWrote ${files.markdown}, ${files.html} and ${files.svg}; recorded in batch_reports.\n` +
        `${JSON.stringify(report.summary)}\n`,
    );
    return 0;
  } finally {
    await pool.end().catch(() => undefined);
    if (readPool !== pool) await readPool.end().catch(() => undefined);
  }
}
