// The structured outputs of a batch's tasks as table columns: one per top-level key of the outputs (first seen
// first), each value one cut line. Every rendering (text, Markdown, HTML) shows the same columns and cells.
import { label } from './text.js';

/** More keys than this are left to agent_runs.output. */
export const OUTPUT_MAX_COLUMNS = 12;
export const OUTPUT_CELL_CHARS = 60;
/** The column of an output that is not an object (a list, a string). */
export const WHOLE_VALUE_COLUMN = 'output';

export interface OutputTable {
  columns: string[];
  /** One per row that has an output field: null when the run ended without a value. */
  rows: { index: number; jobId: string; cells: string[] | null }[];
}

/** Null when no row of the batch has an output (its agents have no output schema). */
export function outputTable(
  rows: readonly { index: number; jobId: string; output?: unknown }[],
): OutputTable | null {
  const withOutput = rows.filter((row) => row.output !== undefined);
  if (withOutput.length === 0) return null;
  const columns: string[] = [];
  const add = (key: string) => {
    if (!columns.includes(key) && columns.length < OUTPUT_MAX_COLUMNS) columns.push(key);
  };
  for (const { output } of withOutput) {
    if (output === null) continue;
    if (isRecord(output)) Object.keys(output).forEach(add);
    else add(WHOLE_VALUE_COLUMN);
  }
  // Only runs without a value: one column to say so.
  if (columns.length === 0) columns.push(WHOLE_VALUE_COLUMN);
  return {
    columns,
    rows: withOutput.map(({ index, jobId, output }) => ({
      index,
      jobId,
      cells: output === null ? null : columns.map((key) => outputCell(output, key)),
    })),
  };
}

/** A field as one cut line: text as it is, anything else as JSON; empty when the output lacks it. */
function outputCell(output: unknown, key: string): string {
  const value = isRecord(output) ? output[key] : key === WHOLE_VALUE_COLUMN ? output : undefined;
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return label(text, OUTPUT_CELL_CHARS);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
