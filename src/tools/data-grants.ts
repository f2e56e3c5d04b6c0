// The data database's account audit (layer b, docs/sql-safety.md#the-database-behind-the-guard): every line of
// SHOW GRANTS must leave the account read-only, or the SQL tools refuse to start. Unknown shapes are refused
// (fail closed).

/** Privileges a read-only account may hold. */
const ALLOWED_PRIVILEGES = new Set(['SELECT', 'SHOW VIEW', 'USAGE']);

/**
 * Why one line of SHOW GRANTS makes an account more than read-only ("INSERT on `db`.*"), or undefined.
 * Handles MariaDB and MySQL 8 forms: column lists (`SELECT (a), INSERT (b) ON db.t`), routines
 * (`EXECUTE ON PROCEDURE db.p`), dynamic privileges (`BACKUP_ADMIN,…`), PROXY, roles (`GRANT r TO u`),
 * grants TO PUBLIC and WITH GRANT OPTION. Unknown shapes are refused (fail closed).
 */
export function grantLineProblem(line: string): string | undefined {
  const text = line.trim();
  // Partial revokes only take away; a default role is harmless unless granted, and that grant has its own line.
  if (/^(REVOKE|SET\s+DEFAULT\s+ROLE)\b/i.test(text)) return undefined;
  if (!/^GRANT\s/i.test(text)) return `an unrecognised grant (${text.slice(0, 60)})`;
  const on = findKeyword(text, 'ON', 6);
  const to = findKeyword(text, 'TO', on ?? 6);
  if (to === undefined) return `an unrecognised grant (${text.slice(0, 60)})`;
  if (on === undefined) {
    return `the role ${text.slice(6, to).trim()} (roles are not allowed: grant SELECT to the account directly)`;
  }
  const target = text.slice(on + 2, to).trim();
  const privileges = splitTopLevel(text.slice(6, on)).map((privilege) =>
    privilege
      .replace(/\([\s\S]*\)\s*$/, '')
      .trim()
      .replace(/\s+/g, ' ')
      .toUpperCase(),
  );
  const database = /^`?([^`.]*)`?\./.exec(target.replace(/^(PROCEDURE|FUNCTION|PACKAGE(\s+BODY)?)\s+/i, ''));
  for (const privilege of privileges) {
    if (!ALLOWED_PRIVILEGES.has(privilege)) return `${privilege} on ${target}`;
    if (privilege === 'USAGE') continue;
    if (target === '*.*') return `${privilege} on *.* (every database, including the mysql schema)`;
    if (database?.[1]?.toLowerCase() === 'mysql') return `${privilege} on ${target} (the mysql schema)`;
  }
  if (/\bWITH\b[\s\S]*\bGRANT\s+OPTION\b/i.test(text.slice(to))) return `GRANT OPTION on ${target}`;
  return undefined;
}

/** Index of `keyword` as a whole word outside quotes and parentheses, from `from` on. */
function findKeyword(text: string, keyword: string, from: number): number | undefined {
  let depth = 0;
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const char = text[i] as string;
    if (quote) {
      if (char === quote) quote = undefined;
      continue;
    }
    if (char === '`' || char === "'" || char === '"') quote = char;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (
      depth === 0 &&
      /\s/.test(text[i - 1] ?? ' ') &&
      text.slice(i, i + keyword.length).toUpperCase() === keyword &&
      /\s/.test(text[i + keyword.length] ?? ' ')
    ) {
      return i;
    }
  }
  return undefined;
}

/** Splits on commas outside quotes and parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === '`' || char === "'" || char === '"') quote = char;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.filter((part) => part.trim() !== '');
}
