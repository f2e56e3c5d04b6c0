// Query results as the model reads them, in as few tokens as possible: a header line of column names, one
// line per row with values separated by ` | ` (no JSON keys repeated on every row, no quotes), long values cut
// with a marker, the whole cut to a size limit on a row boundary, and a footer saying how many rows there
// were when not all are shown, so a partial result is never mistaken for the whole one. Pure.

export interface RowsToRender {
  columns: readonly string[];
  rows: readonly (readonly unknown[])[];
  /** Rows of the whole result; null when only "more than rows.length" is known. */
  rowCount: number | null;
  truncated: boolean;
  /** Set when the rows stop short because the result passed this many bytes (SQL_MAX_RESULT_BYTES). */
  cutAtBytes?: number;
}

export interface RenderOptions {
  /** Characters of the whole output, footer included. Default 4,000. */
  maxChars?: number;
  /** Characters of one value before it is cut. Default 200. */
  maxValueChars?: number;
}

export const DEFAULT_MAX_CHARS = 4_000;
export const DEFAULT_MAX_VALUE_CHARS = 200;
const SEPARATOR = ' | ';
/** Room kept for the footer line, so adding it never breaks the limit. */
const FOOTER_RESERVE = 60;

export function renderRows(result: RowsToRender, options: RenderOptions = {}): string {
  const note = byteNote(result.cutAtBytes);
  const maxChars = Math.max(options.maxChars ?? DEFAULT_MAX_CHARS, FOOTER_RESERVE * 2 + note.length);
  const maxValueChars = Math.max(options.maxValueChars ?? DEFAULT_MAX_VALUE_CHARS, 10);
  const budget = maxChars - FOOTER_RESERVE - note.length;

  if (result.columns.length === 0) return '(no result set: the statement returned no rows)';
  const header = cutLine(result.columns.map((name) => cell(name, maxValueChars)).join(SEPARATOR), budget);
  const lines = [header];
  let used = header.length;
  let shown = 0;
  for (const row of result.rows) {
    let line = row.map((value) => cell(formatValue(value), maxValueChars)).join(SEPARATOR);
    if (used + 1 + line.length > budget) {
      // A first row too wide for the budget is still shown, cut, rather than showing nothing at all.
      if (shown > 0 || budget - used - 1 < 20) break;
      line = cutLine(line, budget - used - 1);
    }
    lines.push(line);
    used += 1 + line.length;
    shown += 1;
  }

  const total = result.truncated ? result.rowCount : (result.rowCount ?? result.rows.length);
  if (result.rows.length === 0 && !result.truncated) lines.push('(no rows)');
  else if (result.truncated || shown < result.rows.length) {
    const of = total === null ? `more than ${result.rows.length}` : String(total);
    lines.push(`(showing ${shown} of ${of} rows${note})`);
  }
  return lines.join('\n');
}

/** Says that rows are missing for their size, not their number, and what the model can do about it. */
function byteNote(cutAtBytes: number | undefined): string {
  if (cutAtBytes === undefined) return '';
  return `; result cut at ${cutAtBytes} bytes: select fewer or shorter columns`;
}

/**
 * One value as text: NULL for null, a date alone when its time is midnight (UTC, how the data database's
 * sessions run) else `YYYY-MM-DD HH:MM:SS` (what MySQL would print and accept back), DECIMAL text and numbers
 * as plain numbers, bytes as UTF-8 text or hex, anything else as compact JSON.
 */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? numberText(value) : String(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return formatDate(value);
  if (value instanceof Uint8Array) return formatBytes(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function numberText(value: number): string {
  const text = String(value);
  // String() switches to exponent notation below 1e-6; write those as plain decimals while 20 places hold them.
  if (text.includes('e') && Math.abs(value) < 1 && Math.abs(value) >= 1e-20) {
    return value.toFixed(20).replace(/0+$/, '');
  }
  return text;
}

function formatDate(date: Date): string {
  if (Number.isNaN(date.getTime())) return 'NULL';
  const iso = date.toISOString(); // 2024-01-05T10:20:30.000Z
  if (iso.endsWith('T00:00:00.000Z')) return iso.slice(0, 10);
  const seconds = iso.slice(0, 19).replace('T', ' ');
  return iso.slice(19, 23) === '.000' ? seconds : `${seconds}${iso.slice(19, 23)}`;
}

function formatBytes(bytes: Uint8Array): string {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  // Printable UTF-8 reads as text; anything else (UUIDs in BINARY(16), hashes) as hex, as MySQL writes it.
  // eslint-disable-next-line no-control-regex
  if (!text.includes('\uFFFD') && !/[\u0000-\u0008\u000e-\u001f]/.test(text)) return text;
  return '0x' + Buffer.from(bytes).toString('hex').toUpperCase();
}

/** A value made safe for one line of the layout, and cut when long. */
function cell(text: string, maxValueChars: number): string {
  const flat = text.replace(/\r?\n/g, '\\n').replace(/\r/g, '\\r').replace(/\|/g, '\\|');
  if (flat.length <= maxValueChars) return flat;
  return `${flat.slice(0, maxValueChars)}…(+${flat.length - maxValueChars} chars)`;
}

function cutLine(line: string, max: number): string {
  if (line.length <= max) return line;
  return `${line.slice(0, Math.max(max - 1, 0))}…`;
}
