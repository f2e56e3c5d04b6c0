// Raw-text layer of the SQL guard: runs before the parser, on the characters the server will see.
//
// Why a lexer of our own: node-sql-parser and MySQL/MariaDB do not agree on every lexical detail, and a guard
// that checks the parser's idea of a query while the server runs a different one is no guard. The known gaps:
// - comments: the parser treats `--x` as a comment, MySQL as two minus signs (`SELECT 5--3` is 5 to the
//   parser, 8 to the server); `/*! … */` and `/*M! … */` are executed by the server but were never meant
//   to be parsed; `/*+ … */` hints change execution;
// - backslash escapes: with sql_mode NO_BACKSLASH_ESCAPES, `'\'` is a complete string, without it an
//   unterminated one, so where a string ends depends on a server setting the guard cannot see.
// So the rule is strict: no comment of any kind and no backslash anywhere. A read-only analytic query needs
// neither (LIKE patterns can use `ESCAPE '!'`). Quoted text is skipped while looking for comments, so `'/*'`,
// `'--'`, `'#'` and `';'` inside a string literal or a backquoted identifier are fine.
//
// The lexer also produces `code`, for keyword scans that must not look inside literals: the query with each
// single-quoted string replaced by `''`, and each backquoted or double-quoted text (an identifier, or under
// ANSI_QUOTES possibly one) replaced by its content with characters outside [A-Za-z0-9_$] turned into `_`,
// so that `sleep`(1) and "mysql"."user" are still seen while "a;b" or "x@y.z" are single harmless words.

export type SqlLexResult = { ok: true; code: string } | { ok: false; reason: string };

/** Characters other than tab, newline and carriage return below U+0020, plus DEL. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

export function lexSql(sql: string): SqlLexResult {
  if (CONTROL_CHARS.test(sql)) {
    return {
      ok: false,
      reason: 'Control characters are not allowed in the query (only spaces, tabs and newlines).',
    };
  }
  if (sql.includes('\\')) {
    return {
      ok: false,
      reason:
        "Backslashes are not allowed (their meaning depends on the SQL mode); for a LIKE escape write ESCAPE '!' instead.",
    };
  }
  let code = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    const next = sql[i + 1];
    if (ch === "'" || ch === '"' || ch === '`') {
      const end = closingQuote(sql, i);
      if (end < 0) {
        return {
          ok: false,
          reason: `Unterminated quoted string or identifier (opening ${ch} is never closed).`,
        };
      }
      if (ch === "'") {
        code += " '' ";
      } else {
        // Backquotes always, double quotes under ANSI_QUOTES, delimit identifiers: keep the name for scans.
        const name = sql.slice(i + 1, end).replaceAll(ch + ch, ch);
        code += ` ${name.replace(/[^A-Za-z0-9_$]/g, '_')} `;
      }
      i = end + 1;
      continue;
    }
    if (ch === '/' && next === '*') {
      const body = sql.slice(i + 2);
      if (body.startsWith('!') || /^M!/i.test(body)) {
        return {
          ok: false,
          reason:
            'Executable comments (/*! … */, /*M! … */) are not allowed; write plain SQL without comments.',
        };
      }
      if (body.startsWith('+')) {
        return { ok: false, reason: 'Optimizer hints (/*+ … */) are not allowed; remove them.' };
      }
      return { ok: false, reason: 'Comments are not allowed (found /* … */); remove them.' };
    }
    if (ch === '-' && next === '-') {
      return {
        ok: false,
        reason:
          'Comments are not allowed (found --; for subtracting a negative number write "- -1" or "+ 1").',
      };
    }
    if (ch === '#') {
      return { ok: false, reason: 'Comments are not allowed (found #); remove them.' };
    }
    code += ch;
    i += 1;
  }
  return { ok: true, code };
}

/** Index of the quote closing the one at `start` (a doubled quote is an escaped quote), or -1. */
function closingQuote(sql: string, start: number): number {
  const quote = sql[start];
  let i = start + 1;
  for (;;) {
    const at = sql.indexOf(quote as string, i);
    if (at < 0) return -1;
    if (sql[at + 1] === quote) {
      i = at + 2;
      continue;
    }
    return at;
  }
}
