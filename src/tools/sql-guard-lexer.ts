// Raw-text layer of the SQL guard: runs before the parser, on the characters the server will see, because
// node-sql-parser and MySQL disagree on comments and backslash escapes; so block comments and lone backslashes
// are refused. Design: docs/sql-safety.md#why-a-lexer-of-its-own.

export type SqlTokenKind = 'space' | 'word' | 'number' | 'string' | 'quoted' | 'punct';

export interface SqlToken {
  kind: SqlTokenKind;
  /** The token as written (quotes included). */
  text: string;
}

export interface SqlLexOk {
  ok: true;
  /** The query as it should run: the original text without an accepted trailing comment. */
  sql: string;
  /** Tokens of `sql`; `string` is a single-quoted literal, `quoted` a backquoted or double-quoted text. */
  tokens: SqlToken[];
  /** `sql` with literals blanked out, quoted names kept, for function and schema scans (see the header). */
  code: string;
  /** `code` with quoted names blanked too, for keyword scans: `\`into\`` is a name, not INTO. */
  keywords: string;
}

export type SqlLexResult = SqlLexOk | { ok: false; reason: string };

/** Characters other than tab, newline and carriage return below U+0020, plus DEL. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * What a stripped trailing comment may contain: words, digits, spaces and light punctuation. No `;`, quotes,
 * backslashes, `=`, `<`, `>`, `*`, `/`, `@` or `#`, so it cannot carry a statement or a condition.
 */
const TRAILING_COMMENT = /^[\p{L}\p{N}_ \t,.:!?()%+-]*$/u;
/**
 * Statement words: a comment naming one looks like SQL put aside (it would not run: the comment is cut off),
 * and is refused so the model says what it means. Words a note needs (from, where, and, or) are fine.
 */
const SQL_WORDS =
  /\b(select|insert|update|delete|replace|drop|create|alter|truncate|rename|grant|revoke|call|handler|lock|unlock|union|into|sleep|benchmark|execute|prepare|kill|shutdown|flush)\b/i;

const WORD_START = /[A-Za-z_$\u0080-\uffff]/;
const WORD_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;
const NUMBER = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/;
const OPERATORS = ['<=>', '->>', '<=', '>=', '<>', '!=', ':=', '||', '&&', '<<', '>>', '->'];

export function lexSql(sql: string): SqlLexResult {
  if (CONTROL_CHARS.test(sql)) {
    return {
      ok: false,
      reason: 'Control characters are not allowed in the query (only spaces, tabs and newlines).',
    };
  }
  const tokens: SqlToken[] = [];
  let comment: { at: number; text: string } | undefined;
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    const next = sql[i + 1];
    if (ch === "'" || ch === '"' || ch === '`') {
      const end = closingQuote(sql, i);
      if (typeof end === 'string') return { ok: false, reason: end };
      tokens.push({ kind: ch === "'" ? 'string' : 'quoted', text: sql.slice(i, end + 1) });
      i = end + 1;
      continue;
    }
    if (ch === '/' && next === '*') return { ok: false, reason: blockCommentReason(sql.slice(i + 2)) };
    const lineComment = (ch === '-' && next === '-' && /[ \t]/.test(sql[i + 2] ?? '')) || ch === '#';
    if (ch === '-' && next === '-' && !lineComment) {
      return {
        ok: false,
        reason:
          'Comments are not allowed (found --; for subtracting a negative number write "- -1" or "+ 1").',
      };
    }
    if (lineComment) {
      const newline = sql.indexOf('\n', i);
      const end = newline < 0 ? sql.length : newline;
      const reason = checkTrailingComment(sql, tokens, i, end);
      if (reason) return { ok: false, reason };
      comment = { at: i, text: sql.slice(i, end) };
      i = end;
      continue;
    }
    if (ch === '\\') {
      return {
        ok: false,
        reason: 'Backslashes are only allowed inside quoted strings, doubled (\\\\ for one backslash).',
      };
    }
    const start = i;
    const number = isNumberStart(sql, i, tokens) ? NUMBER.exec(sql.slice(i)) : null;
    if (number) {
      i += number[0].length;
      tokens.push({ kind: 'number', text: number[0] });
    } else if (/\s/.test(ch)) {
      while (i < sql.length && /\s/.test(sql[i] as string)) i += 1;
      tokens.push({ kind: 'space', text: sql.slice(start, i) });
    } else if (WORD_START.test(ch)) {
      while (i < sql.length && WORD_CHAR.test(sql[i] as string)) i += 1;
      tokens.push({ kind: 'word', text: sql.slice(start, i) });
    } else {
      const op = OPERATORS.find((o) => sql.startsWith(o, i)) ?? ch;
      i += op.length;
      tokens.push({ kind: 'punct', text: op });
    }
  }
  const text = comment ? sql.slice(0, comment.at) + sql.slice(comment.at + comment.text.length) : sql;
  return { ok: true, sql: text, tokens, code: codeOf(tokens, true), keywords: codeOf(tokens, false) };
}

/**
 * A digit starts a number (the digits of a name such as `t1` are read with the name); so does `.` before a
 * digit unless it follows a name or `)` (`t.5` is a column reference, not `t` then `.5`).
 */
function isNumberStart(sql: string, at: number, tokens: readonly SqlToken[]): boolean {
  const ch = sql[at] as string;
  if (/\d/.test(ch)) return true;
  if (ch !== '.' || !/\d/.test(sql[at + 1] ?? '')) return false;
  const previous = tokens.at(-1);
  return !previous || previous.kind === 'space' || (previous.kind === 'punct' && previous.text !== ')');
}

/**
 * A line comment is accepted only after SQL on the last line with SQL, followed by nothing but whitespace,
 * and only when it reads as prose. Anything else (a comment line of its own, a comment before more SQL, a
 * commented-out condition) is refused with a reason.
 */
function checkTrailingComment(
  sql: string,
  before: readonly SqlToken[],
  at: number,
  end: number,
): string | undefined {
  const rest = sql.slice(end);
  const lastLine = before
    .map((t) => t.text)
    .join('')
    .split('\n')
    .at(-1);
  const body = sql.slice(at, end).replace(/^(--|#)/, '');
  if (rest.trim() !== '' || !lastLine || lastLine.trim() === '') {
    return 'Comments are only allowed at the end of the last line of the query (a short note after the SQL); remove the others.';
  }
  if (!TRAILING_COMMENT.test(body) || SQL_WORDS.test(body)) {
    return 'The comment at the end looks like SQL; remove it (a trailing comment may only hold a short note in words).';
  }
  return undefined;
}

function blockCommentReason(body: string): string {
  if (body.startsWith('!') || /^M!/i.test(body)) {
    return 'Executable comments (/*! … */, /*M! … */) are not allowed; write plain SQL without comments.';
  }
  if (body.startsWith('+')) return 'Optimizer hints (/*+ … */) are not allowed; remove them.';
  return 'Comments are not allowed (found /* … */); remove them.';
}

/**
 * Index of the quote closing the one at `start` (a doubled quote is an escaped quote), or the reason the text
 * is refused. In '…' and "…" a backslash must be doubled (see the header); in backquotes it is refused.
 */
function closingQuote(sql: string, start: number): number | string {
  const quote = sql[start] as string;
  for (let i = start + 1; i < sql.length; i += 1) {
    const ch = sql[i];
    if (ch === '\\') {
      if (quote === '`' || sql[i + 1] !== '\\') {
        return "Backslash escapes are not allowed (their meaning depends on the SQL mode): write '' for a quote, \\\\ for a backslash, and ESCAPE '!' for a LIKE escape.";
      }
      i += 1;
      continue;
    }
    if (ch !== quote) continue;
    if (sql[i + 1] === quote) {
      i += 1;
      continue;
    }
    return i;
  }
  return `Unterminated quoted string or identifier (opening ${quote} is never closed).`;
}

/**
 * The text for scans (see the header). Numbers stand apart, so that a keyword glued to one (`1.5INTO`, which
 * the server reads as `1.5 INTO`) is still a word of its own.
 */
function codeOf(tokens: readonly SqlToken[], keepNames: boolean): string {
  let code = '';
  for (const token of tokens) {
    if (token.kind === 'string') code += " '' ";
    else if (token.kind === 'number') code += ` ${token.text} `;
    else if (token.kind !== 'quoted') code += token.text;
    else if (!keepNames) code += ' _q_ ';
    else code += ` ${quotedName(token.text).replace(/[^A-Za-z0-9_$]/g, '_')} `;
  }
  return code;
}

/**
 * `text` without trailing whitespace and semicolons. A loop, not `replace(/[\s;]+$/)`: that regex retries from
 * every character of a long run of spaces inside the text, quadratic on the event loop.
 */
export function withoutTrailingSemicolons(text: string): string {
  let end = text.length;
  while (end > 0 && /[\s;]/.test(text[end - 1] as string)) end -= 1;
  return text.slice(0, end);
}

/** The content of a backquoted or double-quoted token, doubled quotes undone. */
export function quotedName(text: string): string {
  const quote = text[0] as string;
  return text.slice(1, -1).replaceAll(quote + quote, quote);
}
