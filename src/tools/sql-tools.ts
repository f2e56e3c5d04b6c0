// The three data tools (docs/tool-safety.md#the-built-in-tools) over a DataDatabase. Their descriptions and
// schemas are sent to the model on every call, so they are short; the outputs are compact text (render-rows.ts)
// for the same reason.
// sql_query runs the SQL guard first (layer a) and refuses with its reason, so the model can fix the query;
// the database layers (read-only account, read-only session, limits) stand behind it either way.
import { z } from 'zod';
import { ToolError } from '../kernel/errors.js';
import type { TableDescription, TableSummary } from './data-catalog.js';
import type { DataDatabase } from './data-database.js';
import { DEFAULT_MAX_CHARS, renderRows } from './render-rows.js';
import { checkSelectOnly, warmUpSqlGuard } from './sql-guard.js';
import { defineTool, type Tool } from '../kernel/tool.js';

export interface SqlToolsOptions {
  /** Rows shown to the model per query. Default 10. */
  maxRows?: number;
  /** Optional allowlist (`table` or `db.table`, case-insensitive); also limits list_tables/describe_table. */
  allowedTables?: string[];
  /** Server-side time limit per query. Default 5,000 ms. */
  timeoutMs?: number;
  /** Characters of one observation. Default 4,000. */
  maxChars?: number;
}

/** Past the query's own limit: the client's grace and the optional COUNT(*) fit inside. */
const TOOL_GRACE_MS = 2_000;
/** Tables read for list_tables (the output is cut to maxChars anyway) and named in an unknown_table error. */
const LISTED_TABLES = 200;
const NAMED_TABLES = 50;

export function createSqlTools(db: DataDatabase, options: SqlToolsOptions = {}): Tool[] {
  const maxRows = options.maxRows ?? 10;
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const allowed = options.allowedTables
    ? new Set(options.allowedTables.map((t) => t.toLowerCase()))
    : undefined;
  const visible = (table: string) =>
    !allowed || allowed.has(table.toLowerCase()) || allowed.has(`${db.database}.${table}`.toLowerCase());
  // The allowlist's tables of this database, filtered on the server so the listing's limit counts only them.
  const only = options.allowedTables
    ?.map((t) => t.toLowerCase())
    .map((t) => (t.startsWith(`${db.database.toLowerCase()}.`) ? t.slice(db.database.length + 1) : t))
    .filter((t) => !t.includes('.'));
  const visibleTables = async (limit: number) =>
    (await db.listTables({ limit, ...(only ? { only } : {}) })).filter((table) => visible(table.name));
  // The guard parses in worker threads: start them now, not on the first query.
  warmUpSqlGuard();

  const sqlQuery = defineTool({
    name: 'sql_query',
    description:
      `Run one read-only SELECT (MySQL dialect) on the data database. At most ${maxRows} rows come back, ` +
      'so use WHERE, GROUP BY, aggregates, ORDER BY and LIMIT to get just the answer.',
    parameters: z.object({ sql: z.string() }),
    timeoutMs: timeoutMs + TOOL_GRACE_MS,
    // Read-only three times over: the guard, the account's grants, and a READ ONLY session.
    readOnly: true,
    async execute({ sql }, ctx) {
      const verdict = await checkSelectOnly(
        sql,
        options.allowedTables ? { allowedTables: options.allowedTables } : {},
      );
      if (!verdict.ok) throw new ToolError('sql_refused', verdict.reason);
      // The checked text: the query without a trailing comment the guard accepted and cut off.
      const result = await db.query(verdict.sql, { signal: ctx.signal, timeoutMs, maxRows });
      return renderRows(result, options.maxChars === undefined ? {} : { maxChars: options.maxChars });
    },
  });

  const listTables = defineTool({
    name: 'list_tables',
    description: 'List the tables of the data database with their columns.',
    parameters: z.object({}),
    readOnly: true,
    // The data's shape changes rarely: a run with notes on keeps what it saw for the agent's next runs.
    keepsFacts: true,
    async execute() {
      const tables = await visibleTables(LISTED_TABLES + 1);
      return tables.length === 0 ? '(no tables)' : renderSummaries(tables, LISTED_TABLES, maxChars);
    },
  });

  const describeTable = defineTool({
    name: 'describe_table',
    description: 'Columns of one table: type, keys, nullability and foreign keys.',
    // No length limits in the schema: they would cost tokens on every request; a bad name is simply unknown.
    parameters: z.object({ table: z.string() }),
    readOnly: true,
    keepsFacts: true,
    async execute({ table }) {
      const name = table.trim().replace(/^`(.*)`$/, '$1');
      const plausible = name !== '' && name.length <= 64 && visible(name);
      const description = plausible ? await db.describeTable(name) : undefined;
      if (!description || !visible(description.name)) {
        const names = (await visibleTables(NAMED_TABLES + 1)).map((t) => t.name);
        const list =
          names.length > NAMED_TABLES ? `${names.slice(0, NAMED_TABLES).join(', ')}, …` : names.join(', ');
        throw new ToolError(
          'unknown_table',
          `No table named "${table.slice(0, 64)}". Tables: ${list || '(none)'}.`,
        );
      }
      return renderDescription(description);
    },
  });

  return [sqlQuery, listTables, describeTable] as Tool[];
}

/** `orders(id, customer_id, order_date, status, total)`: enough to write most queries without describe_table. */
function renderSummary(table: TableSummary): string {
  const columns = [...table.columns, ...(table.moreColumns ? ['…'] : [])].join(', ');
  return `${table.name}(${columns})${table.isView ? ' view' : ''}`;
}

/** One line per table while they fit in maxChars, then a footer saying how many are not shown. */
function renderSummaries(tables: TableSummary[], listed: number, maxChars: number): string {
  const lines: string[] = [];
  let used = 0;
  for (const table of tables.slice(0, listed)) {
    const line = renderSummary(table);
    if (used + line.length + 1 > maxChars - 80) break;
    lines.push(line);
    used += line.length + 1;
  }
  if (lines.length === tables.length) return lines.join('\n');
  const total = tables.length > listed ? `more than ${listed}` : String(tables.length);
  return [
    ...lines,
    `(showing ${lines.length} of ${total} tables; describe_table gives any table's columns)`,
  ].join('\n');
}

/** One line per column: `customer_id int(10) unsigned, indexed, references customers.id`. */
function renderDescription(table: TableDescription): string {
  const lines = table.columns.map((column) => {
    const notes = [`${column.name} ${column.type}`];
    if (column.key === 'PRI') notes.push('primary key');
    else if (column.key === 'UNI') notes.push('unique');
    else if (column.key === 'MUL') notes.push('indexed');
    if (column.nullable) notes.push('nullable');
    if (column.references) notes.push(`references ${column.references}`);
    if (column.default !== null) notes.push(`default ${column.default}`);
    if (column.extra) notes.push(column.extra.toLowerCase());
    return notes.join(', ');
  });
  const more = table.moreColumns ? [`(only the first ${lines.length} columns are shown)`] : [];
  return [`${table.name}${table.isView ? ' (view)' : ''}:`, ...lines, ...more].join('\n');
}
