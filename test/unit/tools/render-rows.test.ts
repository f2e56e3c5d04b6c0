// The compact rendering of query results for the model: pure, no database.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatValue, renderRows, type RowsToRender } from '../../../src/tools/render-rows.js';

function result(
  columns: string[],
  rows: unknown[][],
  rowCount: number | null = rows.length,
  truncated = false,
) {
  return { columns, rows, rowCount, truncated } satisfies RowsToRender;
}

describe('renderRows', () => {
  it('writes a header and one line per row, values separated by " | "', () => {
    const text = renderRows(
      result(
        ['id', 'name', 'q1_sales'],
        [
          [169, 'Carla Tanaka', '16466.21'],
          [41, 'Alan Okafor', '12989.27'],
        ],
      ),
    );
    expect(text).toBe('id | name | q1_sales\n169 | Carla Tanaka | 16466.21\n41 | Alan Okafor | 12989.27');
  });

  it('says how many rows there were when not all are shown', () => {
    const rows = Array.from({ length: 10 }, (_, i) => [i + 1]);
    expect(
      renderRows(result(['id'], rows, 37, true))
        .split('\n')
        .at(-1),
    ).toBe('(showing 10 of 37 rows)');
    expect(
      renderRows(result(['id'], rows, null, true))
        .split('\n')
        .at(-1),
    ).toBe('(showing 10 of more than 10 rows)');
    expect(renderRows(result(['id'], rows)).split('\n')).toHaveLength(11);
  });

  it('marks an empty result and a statement without a result set', () => {
    expect(renderRows(result(['id', 'name'], []))).toBe('id | name\n(no rows)');
    expect(renderRows(result([], []))).toMatch(/^\(no result set/);
    expect(renderRows(result(['id'], [], 5, true))).toBe('id\n(showing 0 of 5 rows)');
  });

  it('cuts long values with a marker saying how much was left out', () => {
    const text = renderRows(result(['big'], [['x'.repeat(5_000)]]));
    const line = text.split('\n')[1] as string;
    expect(line).toBe(`${'x'.repeat(200)}…(+4800 chars)`);
    expect(renderRows(result(['big'], [['abcdefghijklmnop']]), { maxValueChars: 10 })).toBe(
      'big\nabcdefghij…(+6 chars)',
    );
  });

  it('keeps one row per line: newlines and pipes inside values are escaped', () => {
    expect(renderRows(result(['a', 'b'], [['line 1\nline 2\r\nline 3', 'x | y']]))).toBe(
      'a | b\nline 1\\nline 2\\nline 3 | x \\| y',
    );
  });

  it('cuts the whole output on a row boundary under the size limit, and says so', () => {
    const rows = Array.from({ length: 1_000 }, (_, i) => [i, 'v'.repeat(100)]);
    const text = renderRows(result(['id', 'value'], rows));
    expect(text.length).toBeLessThanOrEqual(4_000);
    const lines = text.split('\n');
    const shown = lines.length - 2;
    expect(shown).toBeGreaterThan(10);
    expect(lines.at(-1)).toBe(`(showing ${shown} of 1000 rows)`);
    expect(lines.slice(1, -1).every((line) => /^\d+ \| v{100}$/.test(line))).toBe(true);
    expect(renderRows(result(['id', 'value'], rows), { maxChars: 500 }).length).toBeLessThanOrEqual(500);
  });

  it('still shows a first row wider than the limit, cut', () => {
    const row = Array.from({ length: 50 }, () => 'y'.repeat(150));
    const text = renderRows(result(['c'], [row]), { maxChars: 1_000 });
    expect(text.length).toBeLessThanOrEqual(1_000);
    expect(text.split('\n')[1]).toMatch(/^y+ \| y+.*…$/);
  });

  it('says when rows are missing for their size, within the size limit', () => {
    const rows = Array.from({ length: 3 }, (_, i) => [i + 1, 'v'.repeat(100)]);
    const cut = { ...result(['id', 'value'], rows, 1000, true), cutAtBytes: 1_048_576 };
    expect(renderRows(cut).split('\n').at(-1)).toBe(
      '(showing 3 of 1000 rows; result cut at 1048576 bytes: select fewer or shorter columns)',
    );
    const many = Array.from({ length: 1_000 }, (_, i) => [i, 'v'.repeat(100)]);
    const text = renderRows(
      { ...result(['id', 'value'], many, null, true), cutAtBytes: 500_000 },
      { maxChars: 800 },
    );
    expect(text.length).toBeLessThanOrEqual(800);
    expect(text.split('\n').at(-1)).toMatch(
      /^\(showing \d+ of more than 1000 rows; result cut at 500000 bytes/,
    );
    expect(renderRows({ ...result(['big'], [], 7, true), cutAtBytes: 1_024 })).toBe(
      'big\n(showing 0 of 7 rows; result cut at 1024 bytes: select fewer or shorter columns)',
    );
  });

  it('never exceeds the size limit, whatever the rows', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 400 }),
      fc.integer(),
      fc.double(),
      fc.constant(null),
      fc.date(),
      fc.boolean(),
    );
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.array(value, { maxLength: 30 }), { maxLength: 60 }),
        fc.integer({ min: 120, max: 6_000 }),
        fc.option(fc.integer({ min: 0, max: 10_000_000 })),
        fc.boolean(),
        (columns, rows, maxChars, rowCount, truncated) => {
          const text = renderRows({ columns, rows, rowCount, truncated }, { maxChars });
          expect(text.length).toBeLessThanOrEqual(maxChars);
          const footer = /\(showing \d+ of (more than )?\d+ rows\)$/.test(text);
          if (truncated) expect(footer).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('formatValue', () => {
  it('renders NULL, numbers, DECIMAL text and booleans plainly', () => {
    expect(formatValue(null)).toBe('NULL');
    expect(formatValue(undefined)).toBe('NULL');
    expect(formatValue('1234.50')).toBe('1234.50');
    expect(formatValue(42)).toBe('42');
    expect(formatValue(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(formatValue(1e-7)).toBe('0.0000001');
    expect(formatValue(-2.5e-300)).toBe('-2.5e-300');
    expect(formatValue(1e21)).toBe('1e+21');
    expect(formatValue(12345678901234567890n)).toBe('12345678901234567890');
    expect(formatValue(true)).toBe('true');
  });

  it('renders dates as ISO dates, with the time only when there is one', () => {
    expect(formatValue(new Date('2024-03-31T00:00:00Z'))).toBe('2024-03-31');
    expect(formatValue(new Date('2024-03-31T14:05:09Z'))).toBe('2024-03-31 14:05:09');
    expect(formatValue(new Date('2024-03-31T14:05:09.250Z'))).toBe('2024-03-31 14:05:09.250');
    expect(formatValue(new Date(Number.NaN))).toBe('NULL');
  });

  it('renders bytes as text when they are text, else as hex', () => {
    expect(formatValue(Buffer.from('héllo'))).toBe('héllo');
    expect(formatValue(Buffer.from([0x00, 0xff, 0x10]))).toBe('0x00FF10');
  });

  it('renders anything else as compact JSON', () => {
    expect(formatValue({ a: 1, b: [2, 3] })).toBe('{"a":1,"b":[2,3]}');
  });
});
