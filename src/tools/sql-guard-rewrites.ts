// Rewrites, for the AST pass only, of MySQL/MariaDB constructs node-sql-parser cannot parse into equivalents it
// can. The server still runs the original text, and the raw-text pass still scans it; these rewrites only let
// the parser build a tree for the rest of the query instead of refusing it outright.
//
// Each rewrite keeps everything the AST checks look at (statements, function names, tables, subqueries,
// variables): it renames a keyword or function to a synonym, drops a keyword that carries no expression
// (NATURAL, DISTINCT inside an aggregate, HIGH_PRIORITY…), or drops a clause after checking that it holds only
// names and literals (index hints, partition lists, RANGE frames, JSON_TABLE column definitions), and moves
// any expression it would lose into a place the parser reads (WITHIN GROUP's ORDER BY becomes an argument).
import type { SqlToken } from './sql-guard-lexer.js';

type Tokens = SqlToken[];

const FRAME_WORDS = new Set([
  'BETWEEN',
  'AND',
  'UNBOUNDED',
  'PRECEDING',
  'FOLLOWING',
  'CURRENT',
  'ROW',
  'INTERVAL',
  'MICROSECOND',
  'SECOND',
  'MINUTE',
  'HOUR',
  'DAY',
  'WEEK',
  'MONTH',
  'QUARTER',
  'YEAR',
  'SECOND_MICROSECOND',
  'MINUTE_MICROSECOND',
  'MINUTE_SECOND',
  'HOUR_MICROSECOND',
  'HOUR_SECOND',
  'HOUR_MINUTE',
  'DAY_MICROSECOND',
  'DAY_SECOND',
  'DAY_MINUTE',
  'DAY_HOUR',
  'YEAR_MONTH',
]);

/** Types of JSON_TABLE columns that take a length or precision in parentheses. */
const SIZED_TYPES = new Set([
  'CHAR',
  'VARCHAR',
  'BINARY',
  'VARBINARY',
  'DECIMAL',
  'NUMERIC',
  'DEC',
  'FLOAT',
  'DOUBLE',
  'INT',
  'INTEGER',
  'BIGINT',
  'SMALLINT',
  'TINYINT',
  'MEDIUMINT',
  'BIT',
  'DATETIME',
  'TIME',
  'TIMESTAMP',
]);

/** `N` and the character set introducers a model writes; an unknown `_name'…'` is left for the parser. */
const INTRODUCER =
  /^(n|_utf8mb4|_utf8mb3|_utf8|_latin1|_latin2|_binary|_ascii|_ucs2|_utf16|_utf16le|_utf32)$/i;

const SELECT_MODIFIERS = new Set([
  'SELECT',
  'ALL',
  'DISTINCT',
  'DISTINCTROW',
  'HIGH_PRIORITY',
  'SQL_NO_CACHE',
]);

/** The query text for the parser. */
export function rewriteForParser(tokens: readonly SqlToken[]): string {
  const t: Tokens = tokens.map((token) => ({ ...token }));
  for (const rule of RULES) rule(t);
  return t.map((token) => token.text).join('');
}

const RULES: ((t: Tokens) => void)[] = [
  leadingDotNumbers,
  stringLiterals,
  nullSafeEquals,
  keywordsWithoutExpressions,
  aggregateSynonyms,
  indexHintsAndPartitions,
  substringFromFor,
  charUsing,
  rangeFrames,
  fetchFirst,
  jsonTable,
  withinGroup,
];

/** `.5` → `0.5`. */
function leadingDotNumbers(t: Tokens): void {
  for (const token of t)
    if (token.kind === 'number' && token.text.startsWith('.')) token.text = `0${token.text}`;
}

/**
 * `N'x'` (national string) and `_utf8mb4'x'` (character set introducer) → `'x'`; `'a' 'b'` (adjacent
 * literals, one string to MySQL) → `'a'`.
 */
function stringLiterals(t: Tokens): void {
  t.forEach((token, i) => {
    if (token.kind !== 'string') return;
    const before = t[i - 1];
    if (before?.kind === 'word' && INTRODUCER.test(before.text)) blank(before);
    else if (t[previousIndex(t, i)]?.kind === 'string') blank(token);
  });
}

/** `a <=> b` (NULL-safe equality) → `a = b`: the same comparison tree. */
function nullSafeEquals(t: Tokens): void {
  for (const token of t) if (token.kind === 'punct' && token.text === '<=>') token.text = '=';
}

/** NATURAL (joins), SOUNDS (LIKE), HIGH_PRIORITY, STRAIGHT_JOIN as a SELECT modifier, DISTINCT in an aggregate. */
function keywordsWithoutExpressions(t: Tokens): void {
  t.forEach((token, i) => {
    const word = upper(token);
    if (!word) return;
    const next = upper(t[nextIndex(t, i)]);
    const before = upper(t[previousIndex(t, i)]);
    if (word === 'NATURAL' && /^(JOIN|LEFT|RIGHT|INNER|OUTER)$/.test(next ?? '')) blank(token);
    else if (word === 'SOUNDS' && next === 'LIKE') blank(token);
    else if (word === 'HIGH_PRIORITY') blank(token);
    else if (word === 'DISTINCTROW') token.text = 'DISTINCT';
    else if (word === 'STRAIGHT_JOIN' && before && SELECT_MODIFIERS.has(before)) blank(token);
    else if (word === 'DISTINCT' && t[previousIndex(t, i)]?.text === '(') {
      // COUNT(DISTINCT a, b) parses as is and means something else without DISTINCT's list.
      const callee = upper(t[previousIndex(t, previousIndex(t, i))]);
      if (callee && callee !== 'COUNT') blank(token);
    }
  });
}

/** STD → STDDEV_POP and VARIANCE → VAR_POP: MySQL synonyms the parser does not know. */
function aggregateSynonyms(t: Tokens): void {
  t.forEach((token, i) => {
    const word = upper(token);
    if (t[nextIndex(t, i)]?.text !== '(') return;
    if (word === 'STD') token.text = 'STDDEV_POP';
    else if (word === 'VARIANCE') token.text = 'VAR_POP';
  });
}

/** `USE|FORCE|IGNORE INDEX|KEY [FOR …] (names)` and `PARTITION (names)` after a table: names only, dropped. */
function indexHintsAndPartitions(t: Tokens): void {
  t.forEach((token, i) => {
    const word = upper(token);
    let open = -1;
    if (word === 'USE' || word === 'FORCE' || word === 'IGNORE') {
      let j = nextIndex(t, i);
      if (!/^(INDEX|KEY)$/.test(upper(t[j]) ?? '')) return;
      j = nextIndex(t, j);
      if (upper(t[j]) === 'FOR') {
        j = nextIndex(t, j);
        if (upper(t[j]) === 'ORDER' || upper(t[j]) === 'GROUP') j = nextIndex(t, j);
        j = nextIndex(t, j);
      }
      open = j;
    } else if (word === 'PARTITION') {
      const before = t[previousIndex(t, i)];
      if (before?.kind !== 'word' && before?.kind !== 'quoted') return;
      open = nextIndex(t, i);
    } else {
      return;
    }
    if (t[open]?.text !== '(') return;
    const close = matchingParen(t, open);
    if (close < 0) return;
    const names = t.slice(open + 1, close);
    if (
      !names.every((n) => n.kind === 'word' || n.kind === 'quoted' || n.kind === 'space' || n.text === ',')
    ) {
      return;
    }
    for (let k = i; k <= close; k += 1) blank(t[k] as SqlToken);
  });
}

/** `SUBSTRING(x FROM a FOR b)` → `SUBSTRING(x, a, b)` (also SUBSTR, MID). */
function substringFromFor(t: Tokens): void {
  forEachCall(t, /^(SUBSTRING|SUBSTR|MID)$/, (open, close) => {
    for (const k of topLevel(t, open, close)) {
      const word = upper(t[k]);
      if (word === 'FROM' || word === 'FOR') (t[k] as SqlToken).text = ',';
    }
  });
}

/** `CHAR(65 USING utf8mb4)` → `CHAR(65)`: the character set is a name. */
function charUsing(t: Tokens): void {
  forEachCall(t, /^CHAR$/, (open, close) => {
    for (const k of topLevel(t, open, close)) {
      if (upper(t[k]) !== 'USING') continue;
      const name = nextIndex(t, k);
      if (name < close && (t[name]?.kind === 'word' || t[name]?.kind === 'quoted')) {
        blank(t[k] as SqlToken);
        blank(t[name] as SqlToken);
      }
    }
  });
}

/**
 * A `RANGE …` window frame holds only keywords, numbers and interval literals (MySQL allows nothing else
 * there); checked, it is replaced by a ROWS frame the parser knows.
 */
function rangeFrames(t: Tokens): void {
  t.forEach((token, i) => {
    if (upper(token) !== 'RANGE') return;
    const first = t[nextIndex(t, i)];
    if (first?.kind !== 'number' && !/^(BETWEEN|UNBOUNDED|CURRENT|INTERVAL)$/.test(upper(first) ?? ''))
      return;
    let end = i + 1;
    for (; end < t.length; end += 1) {
      const item = t[end] as SqlToken;
      if (item.text === ')') break;
      const word = upper(item);
      const literal = item.kind === 'number' || item.kind === 'string' || item.kind === 'space';
      if (!literal && !(word && FRAME_WORDS.has(word))) return;
    }
    if (t[end]?.text !== ')') return;
    token.text = 'ROWS BETWEEN 1 PRECEDING AND CURRENT ROW';
    for (let k = i + 1; k < end; k += 1) blank(t[k] as SqlToken);
  });
}

/** `FETCH FIRST|NEXT n ROW|ROWS ONLY` → `LIMIT n`. */
function fetchFirst(t: Tokens): void {
  t.forEach((token, i) => {
    if (upper(token) !== 'FETCH') return;
    const first = nextIndex(t, i);
    const count = nextIndex(t, first);
    const rows = nextIndex(t, count);
    const only = nextIndex(t, rows);
    if (!/^(FIRST|NEXT)$/.test(upper(t[first]) ?? '') || t[count]?.kind !== 'number') return;
    if (!/^ROWS?$/.test(upper(t[rows]) ?? '') || upper(t[only]) !== 'ONLY') return;
    token.text = 'LIMIT';
    for (const k of [first, rows, only]) blank(t[k] as SqlToken);
  });
}

/**
 * `JSON_TABLE(expr, path COLUMNS (defs)) AS jt` → `(SELECT expr, path) AS jt`: a derived table of the same
 * name whose expressions the AST pass still checks. The column definitions are dropped once checked to hold
 * only names, types, literals and keywords: no parenthesis but a type's size or a NESTED COLUMNS list, so no
 * call and no subquery.
 */
function jsonTable(t: Tokens): void {
  forEachCall(t, /^JSON_TABLE$/, (open, close, name) => {
    const columns = topLevel(t, open, close).find((k) => upper(t[k]) === 'COLUMNS');
    if (columns === undefined) return;
    const defsOpen = nextIndex(t, columns);
    if (t[defsOpen]?.text !== '(') return;
    const defsClose = matchingParen(t, defsOpen);
    if (defsClose < 0 || nextIndex(t, defsClose) !== close) return;
    for (let k = defsOpen; k <= defsClose; k += 1) {
      const item = t[k] as SqlToken;
      if (item.text === '(') {
        const before = upper(t[previousIndex(t, k)]);
        if (!before || (!SIZED_TYPES.has(before) && before !== 'COLUMNS')) return;
      } else if (!['word', 'quoted', 'string', 'number', 'space'].includes(item.kind)) {
        if (item.text !== ',' && item.text !== ')' && item.text !== '-') return;
      }
    }
    blank(t[name] as SqlToken);
    (t[open] as SqlToken).text = '(SELECT ';
    for (let k = columns; k <= defsClose; k += 1) blank(t[k] as SqlToken);
  });
}

/**
 * `PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY total) OVER ()` → `PERCENTILE_CONT(0.5, total) OVER ()`: the
 * ordering expression becomes an argument, so the AST pass still checks it.
 */
function withinGroup(t: Tokens): void {
  t.forEach((token, i) => {
    if (upper(token) !== 'WITHIN') return;
    const group = nextIndex(t, i);
    const open = nextIndex(t, group);
    const order = nextIndex(t, open);
    const by = nextIndex(t, order);
    const argsClose = previousIndex(t, i);
    if (upper(t[group]) !== 'GROUP' || t[open]?.text !== '(' || t[argsClose]?.text !== ')') return;
    if (upper(t[order]) !== 'ORDER' || upper(t[by]) !== 'BY') return;
    const close = matchingParen(t, open);
    if (close < 0) return;
    for (const k of topLevel(t, open, close))
      if (/^(ASC|DESC)$/.test(upper(t[k]) ?? '')) blank(t[k] as SqlToken);
    const ordering = t
      .slice(by + 1, close)
      .map((item) => item.text)
      .join('');
    (t[argsClose] as SqlToken).text = `, ${ordering})`;
    for (let k = i; k <= close; k += 1) blank(t[k] as SqlToken);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Token helpers.

function upper(token: SqlToken | undefined): string | undefined {
  return token?.kind === 'word' ? token.text.toUpperCase() : undefined;
}

function blank(token: SqlToken): void {
  token.kind = 'space';
  token.text = ' ';
}

function nextIndex(t: Tokens, i: number): number {
  let j = i + 1;
  while (j < t.length && t[j]?.kind === 'space') j += 1;
  return j;
}

function previousIndex(t: Tokens, i: number): number {
  let j = i - 1;
  while (j >= 0 && t[j]?.kind === 'space') j -= 1;
  return j;
}

/** Index of the `)` closing the `(` at `open`, or -1. */
function matchingParen(t: Tokens, open: number): number {
  let depth = 0;
  for (let k = open; k < t.length; k += 1) {
    const text = t[k]?.kind === 'punct' ? t[k]?.text : undefined;
    if (text === '(') depth += 1;
    else if (text === ')' && --depth === 0) return k;
  }
  return -1;
}

/** Indexes of the tokens directly inside the parentheses `open`…`close` (not in nested ones). */
function topLevel(t: Tokens, open: number, close: number): number[] {
  const indexes: number[] = [];
  let depth = 0;
  for (let k = open + 1; k < close; k += 1) {
    const text = t[k]?.kind === 'punct' ? t[k]?.text : undefined;
    if (text === '(') depth += 1;
    else if (text === ')') depth -= 1;
    else if (depth === 0) indexes.push(k);
  }
  return indexes;
}

/** Calls `NAME(` … `)` of the functions whose upper-case name matches. */
function forEachCall(
  t: Tokens,
  name: RegExp,
  visit: (open: number, close: number, name: number) => void,
): void {
  t.forEach((token, i) => {
    const word = upper(token);
    if (!word || !name.test(word)) return;
    const open = nextIndex(t, i);
    if (t[open]?.text !== '(') return;
    const close = matchingParen(t, open);
    if (close >= 0) visit(open, close, i);
  });
}
