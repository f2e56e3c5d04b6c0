// What the SQL tools show the model of the data database's schema (list_tables, describe_table), from
// information_schema through fixed, parameterized queries, every list bounded: a schema of 100,000 tables or a
// table of 5,000 columns is never read whole.
import type { FieldPacket, RowDataPacket } from 'mysql2/promise';

/** The data database as this module reads it: its name, and a fixed query of ours with its errors mapped. */
export interface SchemaReader {
  readonly database: string;
  query(sql: string, values: unknown[]): Promise<[RowDataPacket[], FieldPacket[]]>;
}

export interface TableSummary {
  name: string;
  isView: boolean;
  columns: string[];
  /** Set when the table has more than the columns listed. */
  moreColumns?: boolean;
}

export interface ListTablesOptions {
  /** Tables returned, the first by name. Default 200, at most 1,000. */
  limit?: number;
  /** Only these tables (compared case-insensitively), e.g. an allowlist's. */
  only?: readonly string[];
}

export interface ColumnDescription {
  name: string;
  /** COLUMN_TYPE, e.g. `decimal(12,2)`, `int(10) unsigned`. */
  type: string;
  nullable: boolean;
  /** COLUMN_KEY: PRI, UNI, MUL or ''. */
  key: string;
  default: string | null;
  extra: string;
  /** `table.column` this column references (foreign key), if any. */
  references: string | null;
}

export interface TableDescription {
  name: string;
  isView: boolean;
  columns: ColumnDescription[];
  /** Set when the table has more than the columns described. */
  moreColumns?: boolean;
}

const DEFAULT_LISTED_TABLES = 200;
const MAX_LISTED_TABLES = 1_000;
/** Columns per table in listTables (enough to write most queries) and in describeTable. */
const MAX_LISTED_COLUMNS = 40;
const MAX_DESCRIBED_COLUMNS = 300;

/**
 * Tables and views of the data database with their column names, sorted by name (code points), at most
 * `limit` of them and MAX_LISTED_COLUMNS columns each: a schema of 100,000 tables is never read whole.
 */
export async function listTables(
  reader: SchemaReader,
  options: ListTablesOptions = {},
): Promise<TableSummary[]> {
  const limit = Math.min(Math.max(Math.floor(options.limit ?? DEFAULT_LISTED_TABLES), 0), MAX_LISTED_TABLES);
  const only = options.only?.map((name) => name.toLowerCase());
  if (limit === 0 || only?.length === 0) return [];
  const [tables] = await reader.query(
    'SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?' +
      (only ? ' AND LOWER(TABLE_NAME) IN (?)' : '') +
      ' ORDER BY CAST(TABLE_NAME AS BINARY) LIMIT ?',
    only ? [reader.database, only, limit] : [reader.database, limit],
  );
  if (tables.length === 0) return [];
  const [columns] = await reader.query(
    'SELECT t, c FROM (SELECT TABLE_NAME AS t, COLUMN_NAME AS c, ' +
      'ROW_NUMBER() OVER (PARTITION BY TABLE_NAME ORDER BY ORDINAL_POSITION) AS n ' +
      'FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?)) AS numbered ' +
      'WHERE n <= ? ORDER BY t, n',
    [reader.database, tables.map((row) => String(row['name'])), MAX_LISTED_COLUMNS + 1],
  );
  const byTable = new Map<string, string[]>();
  for (const row of columns) {
    const table = String(row['t']);
    const list = byTable.get(table) ?? [];
    list.push(String(row['c']));
    byTable.set(table, list);
  }
  return tables
    .map((row) => {
      const name = String(row['name']);
      const names = byTable.get(name) ?? [];
      const summary = {
        name,
        isView: String(row['type']).toUpperCase().includes('VIEW'),
        columns: names.slice(0, MAX_LISTED_COLUMNS),
      };
      return names.length > MAX_LISTED_COLUMNS ? { ...summary, moreColumns: true } : summary;
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)); // code points: same on every server
}

/**
 * Columns of one table of the data database (exact name first, then case-insensitive), at most
 * MAX_DESCRIBED_COLUMNS of them; undefined if there is no such table.
 */
export async function describeTable(
  reader: SchemaReader,
  name: string,
): Promise<TableDescription | undefined> {
  const lookup = async (condition: string) =>
    (
      await reader.query(
        'SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES ' +
          `WHERE TABLE_SCHEMA = ? AND ${condition} ORDER BY CAST(TABLE_NAME AS BINARY) LIMIT 10`,
        [reader.database, name],
      )
    )[0];
  let found = await lookup('TABLE_NAME = ?');
  if (found.length === 0) found = await lookup('LOWER(TABLE_NAME) = LOWER(?)');
  const row =
    found.find((t) => String(t['name']) === name) ??
    found.find((t) => String(t['name']).toLowerCase() === name.toLowerCase());
  if (!row) return undefined;
  const table = { name: String(row['name']), isView: String(row['type']).toUpperCase().includes('VIEW') };
  const [columns] = await reader.query(
    'SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_KEY AS k, ' +
      'COLUMN_DEFAULT AS d, EXTRA AS extra FROM information_schema.COLUMNS ' +
      'WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION LIMIT ?',
    [reader.database, table.name, MAX_DESCRIBED_COLUMNS + 1],
  );
  const [keys] = await reader.query(
    'SELECT COLUMN_NAME AS c, REFERENCED_TABLE_NAME AS rt, REFERENCED_COLUMN_NAME AS rc ' +
      'FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ' +
      'AND REFERENCED_TABLE_NAME IS NOT NULL LIMIT ?',
    [reader.database, table.name, MAX_DESCRIBED_COLUMNS * 4],
  );
  const references = new Map(
    keys.map((row) => [String(row['c']), `${String(row['rt'])}.${String(row['rc'])}`]),
  );
  const description = {
    ...table,
    columns: columns.slice(0, MAX_DESCRIBED_COLUMNS).map((row) => ({
      name: String(row['name']),
      type: String(row['type']),
      nullable: String(row['nullable']).toUpperCase() === 'YES',
      key: String(row['k'] ?? ''),
      default: row['d'] == null ? null : String(row['d']),
      extra: String(row['extra'] ?? ''),
      references: references.get(String(row['name'])) ?? null,
    })),
  };
  return columns.length > MAX_DESCRIBED_COLUMNS ? { ...description, moreColumns: true } : description;
}
