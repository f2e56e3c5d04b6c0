// First layer of defence for the `sql_query` tool: decides, without any I/O, whether a query from the model is
// one read-only SELECT that cannot write, read files, sleep, lock or touch the system schemas. Three passes
// (raw text, AST, table list), each able to refuse alone; the parse runs off the event loop under a deadline
// (sql-parse-pool.ts), so the guard is async. Design: docs/sql-safety.md#how-the-guard-is-built.
import { lexSql, withoutTrailingSemicolons, type SqlLexOk } from './sql-guard-lexer.js';
import { rewriteForParser } from './sql-guard-rewrites.js';
import { SqlParsePool } from './sql-parse-pool.js';
import { VerdictCache } from './sql-verdict-cache.js';
import type { SqlGuardVerdict } from './sql-guard-verdict.js';

export interface SqlGuardOptions {
  /** Optional allowlist, case-insensitive: `table` or `db.table`; absent = any table of the data db. */
  allowedTables?: readonly string[];
}

export type { SqlGuardVerdict } from './sql-guard-verdict.js';

const parsePool = new SqlParsePool();
const verdicts = new VerdictCache();
/** Refusals that depend on the machine (a parse past its deadline, a failed thread), never cached. */
const transientVerdicts = new WeakSet<SqlGuardVerdict>();

/** Cheap structural limits, checked before parsing; a legitimate analytic query is far inside each. */
const MAX_SQL_LENGTH = 8_000;
const MAX_PAREN_DEPTH = 32;
const MAX_TOKENS = 2_000;
const MAX_AST_DEPTH = 1_000;
const MAX_AST_NODES = 200_000;

const SYSTEM_SCHEMAS = new Set(['mysql', 'information_schema', 'performance_schema', 'sys']);

/**
 * Functions that wait, lock, read files, touch replication or sequences, run programs (UDFs), or read what an
 * earlier statement of the session left.
 */
const DENIED_FUNCTIONS = new Set([
  'sleep',
  'benchmark',
  'load_file',
  'get_lock',
  'release_lock',
  'release_all_locks',
  'is_free_lock',
  'is_used_lock',
  'master_pos_wait',
  'source_pos_wait',
  'master_gtid_wait',
  'wait_for_executed_gtid_set',
  'wait_until_sql_thread_after_gtids',
  'sys_exec',
  'sys_eval',
  'sys_get',
  'sys_set',
  'sys_bineval',
  'nextval',
  'setval',
  'lastval',
  'last_insert_id',
  // What the previous statement on the connection left: FOUND_ROWS() is the row count of the last SELECT (a
  // previous job's, on a pooled connection; no reset clears it), ROW_COUNT() the last statement's.
  'found_rows',
  'row_count',
]);
/**
 * Prefixes of denied function names: lib_mysqludf_sys, MySQL's data-dictionary internals, and the UDFs of
 * MySQL's locking service and version tokens plugin (their locks last as long as the session).
 */
const DENIED_FUNCTION_PREFIXES = ['sys_', 'internal_', 'service_', 'version_tokens_'];

/** AST `type` values of statements other than SELECT (anywhere in the tree, they mean a write or worse). */
const STATEMENT_TYPES = new Set([
  'insert',
  'replace',
  'update',
  'delete',
  'create',
  'drop',
  'alter',
  'truncate',
  'rename',
  'grant',
  'revoke',
  'set',
  'call',
  'do',
  'handler',
  'load_data',
  'lock',
  'unlock',
  'show',
  'explain',
  // Not 'desc': ORDER BY items carry `type: 'DESC'`. A DESCRIBE statement is refused at the root instead.
  'use',
  'transaction',
  'prepare',
  'execute',
  'deallocate',
  'flush',
  'kill',
  'analyze',
  'optimize',
  'repair',
  'install',
  'uninstall',
  'shutdown',
  'purge',
  'reset',
  'xa',
  'savepoint',
  'declare',
  'return',
]);

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

const STATEMENT_KEYWORD =
  /\b(insert|update|delete|replace|create|drop|alter|truncate|rename|grant|revoke|call|handler|explain|describe|prepare|execute|show)\b(?!\s*\()/i;

export async function checkSelectOnly(sql: string, options: SqlGuardOptions = {}): Promise<SqlGuardVerdict> {
  // Past the length limit (or not a string) the refusal costs nothing: not worth a cache entry of that size.
  const basic = checkBasics(sql);
  if (basic) return refuse(basic);
  const key = VerdictCache.key(sql, options.allowedTables);
  const cached = verdicts.get(key);
  if (cached) return cached;
  const verdict = await guarded(async () => {
    const lexed = lexChecked(sql);
    if (typeof lexed === 'string') return refuse(lexed);
    const textReason = checkText(lexed);
    if (textReason) return refuse(textReason);
    return checkParsed(lexed, options);
  });
  if (!transientVerdicts.has(verdict)) verdicts.set(key, verdict);
  return verdict;
}

/** Starts the parser threads ahead of the first query (a worker calls it when it builds its tools). */
export function warmUpSqlGuard(): void {
  parsePool.warmUp();
}

/** Resolves once the parser threads, spares included, are started. */
export function sqlGuardReady(): Promise<void> {
  return parsePool.ready();
}

/**
 * Pass 1 alone (raw text): the reason the text is refused, or undefined. Exported so tests can show that each
 * layer refuses on its own; callers use checkSelectOnly.
 */
export function checkSelectText(sql: string): string | undefined {
  const basic = checkBasics(sql);
  if (basic) return basic;
  const lexed = lexSql(sql);
  if (!lexed.ok) return lexed.reason;
  return checkText(lexed);
}

/**
 * Passes 2 and 3 alone (parser, AST, tableList), without the raw-text scans: the lexer still tokenizes (it
 * finds where strings end and cuts a trailing comment) and the size limits still apply. Exported so tests can
 * show that each layer refuses on its own; callers use checkSelectOnly.
 */
export async function checkSelectAst(sql: string, options: SqlGuardOptions = {}): Promise<SqlGuardVerdict> {
  return guarded(async () => {
    const lexed = lexChecked(sql);
    return typeof lexed === 'string' ? refuse(lexed) : checkParsed(lexed, options);
  });
}

async function guarded(run: () => Promise<SqlGuardVerdict>): Promise<SqlGuardVerdict> {
  try {
    return await run();
  } catch (error) {
    // Nothing in the checks should throw; if something does, refuse rather than let the query through.
    return refuseForNow(
      `The query could not be checked (${shortError(error)}); send one plain SELECT statement.`,
    );
  }
}

/** The basics, the lexer and the structural limits: a lexed query, or the reason it is refused. */
function lexChecked(sql: string): SqlLexOk | string {
  const basic = checkBasics(sql);
  if (basic) return basic;
  const lexed = lexSql(sql);
  if (!lexed.ok) return lexed.reason;
  return checkShape(lexed) ?? lexed;
}

function checkBasics(sql: unknown): string | undefined {
  if (typeof sql !== 'string') return 'The query must be a string holding one SELECT statement.';
  if (sql.trim() === '') return 'The query is empty; send one SELECT statement.';
  if (sql.length > MAX_SQL_LENGTH) {
    return `The query is too long (${sql.length} characters, at most ${MAX_SQL_LENGTH}); simplify it.`;
  }
  return undefined;
}

/** Parenthesis depth and token count: what makes a parse expensive, refused before it starts. */
function checkShape(lexed: SqlLexOk): string | undefined {
  let depth = 0;
  let deepest = 0;
  let count = 0;
  for (const token of lexed.tokens) {
    if (token.kind === 'space') continue;
    count += 1;
    if (token.text === '(') deepest = Math.max(deepest, ++depth);
    else if (token.text === ')') depth -= 1;
  }
  if (deepest > MAX_PAREN_DEPTH) {
    return `The query nests parentheses ${deepest} deep (at most ${MAX_PAREN_DEPTH}); flatten it, for example with a WITH clause.`;
  }
  if (count > MAX_TOKENS) {
    return `The query has ${count} tokens (at most ${MAX_TOKENS}); simplify it.`;
  }
  return undefined;
}

async function checkParsed(lexed: SqlLexOk, options: SqlGuardOptions): Promise<SqlGuardVerdict> {
  const parseText = rewriteForParser(lexed.tokens);
  const outcome = await parsePool.parse(parseText);
  if (outcome.kind === 'timeout') {
    return refuseForNow(
      `The query is too complex to check (parsing it took over ${parsePool.deadline} ms, twice); simplify it: fewer nested parentheses, CASE or CAST.`,
    );
  }
  if (outcome.kind === 'failed') {
    return refuseForNow(
      `The query could not be checked (${outcome.message}); send one plain SELECT statement.`,
    );
  }
  if (outcome.kind === 'syntax_error') {
    // A statement keyword in text that does not parse (`WITH x AS (DELETE …) SELECT …`) makes a clearer
    // reason than the parse error. `INSERT(` and `REPLACE(` are string functions, hence the lookahead.
    const verb = STATEMENT_KEYWORD.exec(lexed.keywords)?.[1];
    if (verb)
      return refuse(`Only SELECT statements are allowed; found ${verb.toUpperCase()} inside the query.`);
    return refuse(parseErrorReason(parseText, outcome));
  }
  const parsed = { ast: outcome.ast, tableList: outcome.tableList };

  const statements = (Array.isArray(parsed.ast) ? parsed.ast : [parsed.ast]).filter((s) => s != null);
  if (statements.length !== 1) return refuse('Exactly one statement is allowed; send a single SELECT.');
  const root = statements[0];
  if (!isRecord(root) || root.type !== 'select') {
    return refuse(`Only SELECT statements are allowed; got ${statementName(root)}.`);
  }

  const walk = new AstWalk();
  const astReason = walk.visit(root, new Set(), 0);
  if (astReason) return refuse(astReason);

  const listReason = checkTableList(parsed.tableList, walk);
  if (listReason) return refuse(listReason);

  const tables = walk.tableNames();
  if (options.allowedTables) {
    const allowed = new Set(options.allowedTables.map((t) => t.trim().toLowerCase()));
    for (const table of tables) {
      if (!allowed.has(table.toLowerCase())) {
        const list = [...options.allowedTables].slice(0, 30).join(', ') || '(none)';
        return refuse(`Table ${table} is not in the allowed tables: ${list}.`);
      }
    }
  }
  return { ok: true, tables, sql: lexed.sql };
}

// ---------------------------------------------------------------------------------------------------------
// Pass 1: keyword scans on the raw text with string literals blanked out (defence in depth, and clearer
// reasons for hostile text that does not parse).

function checkText({ code, keywords }: SqlLexOk): string | undefined {
  const trimmed = withoutTrailingSemicolons(code);
  if (trimmed.trim() === '') return 'The query is empty; send one SELECT statement.';
  if (trimmed.includes(';')) {
    return 'Only one statement is allowed; remove everything after the first semicolon.';
  }
  const first = /^[\s(]*([A-Za-z_]+)/.exec(trimmed)?.[1];
  if (first && !/^(select|with)$/i.test(first)) {
    return `Only SELECT statements are allowed; got ${first.toUpperCase()}.`;
  }
  if (/\binto\b/i.test(keywords)) return intoReason();
  if (code.includes('@') || code.includes(':=')) return variablesReason();
  // Outside string literals MySQL has no use for `?` or `:` in a plain SELECT (`:=` is assignment, above).
  if (code.includes('?') || code.includes(':')) return placeholdersReason();
  const lock = /\b(for\s+update|for\s+share|lock\s+in\s+share\s+mode)\b/i.exec(keywords)?.[1];
  if (lock) return lockingReason(lock);
  // Names are matched from their first character only: without the lookbehind the scan retries from every
  // character of a long name, quadratic on the event loop.
  for (const match of code.matchAll(/(?<![A-Za-z0-9_$])([A-Za-z0-9_$]+)\s*\(/g)) {
    const name = match[1] as string;
    if (isDeniedFunction(name)) return deniedFunctionReason(name);
  }
  // `sys.id` is a column of the table aliased `sys` when the query declares that alias; a table of the sys
  // schema under an alias of the same name is still refused by the AST and table-list passes.
  const aliases = declaredAliases(keywords);
  for (const match of code.matchAll(/(?<![A-Za-z0-9_$])([A-Za-z_]+)\s*\./g)) {
    const name = (match[1] as string).toLowerCase();
    if (SYSTEM_SCHEMAS.has(name) && !aliases.has(name)) return systemSchemaReason(name);
  }
  return undefined;
}

/** Names declared as aliases (`AS name`, `FROM|JOIN table name`) or CTEs (`name AS (`), lower case. */
function declaredAliases(keywords: string): Set<string> {
  const aliases = new Set<string>();
  for (const match of keywords.matchAll(/\bAS\s+([A-Za-z_][A-Za-z0-9_$]*)\b/gi)) {
    aliases.add((match[1] as string).toLowerCase());
  }
  for (const match of keywords.matchAll(/\b([A-Za-z_][A-Za-z0-9_$]*)\s+AS\s*\(/gi)) {
    aliases.add((match[1] as string).toLowerCase());
  }
  const implicit = /\b(?:FROM|JOIN)\s+[A-Za-z0-9_$.]+\s+([A-Za-z_][A-Za-z0-9_$]*)\b(?!\s*[.(])/gi;
  for (const match of keywords.matchAll(implicit)) aliases.add((match[1] as string).toLowerCase());
  return aliases;
}

// ---------------------------------------------------------------------------------------------------------
// Pass 2: the AST.

interface TableRef {
  db: string | null;
  table: string;
}

class AstWalk {
  private readonly tables: TableRef[] = [];
  /** Every CTE name anywhere in the query (lower case), for reconciling with the parser's tableList. */
  readonly cteNames = new Set<string>();
  private nodes = 0;

  /** Walks any value; `scope` holds the CTE names (lower case) visible at this point. Returns a reason. */
  visit(value: unknown, scope: ReadonlySet<string>, depth: number): string | undefined {
    if (depth > MAX_AST_DEPTH) return 'The query is nested too deeply; simplify it.';
    if (Array.isArray(value)) {
      for (const item of value) {
        const reason = this.visit(item, scope, depth + 1);
        if (reason) return reason;
      }
      return undefined;
    }
    if (!isRecord(value)) return undefined;
    // No "seen" set: an object shared between two places of the tree must be checked in each scope. The depth
    // and node budgets bound the work (and break any cycle).
    this.nodes += 1;
    if (this.nodes > MAX_AST_NODES) return 'The query is too large to check; simplify it.';
    if (value.type === 'select') return this.visitSelect(value, scope, depth);

    const reason = this.checkNode(value, scope);
    if (reason) return reason;
    for (const [key, child] of Object.entries(value)) {
      if (key === 'ast' && isRecord(child) && child.type !== 'select') {
        return `Only SELECT statements are allowed, also in subqueries; got ${statementName(child)}.`;
      }
      const childReason = this.visit(child, scope, depth + 1);
      if (childReason) return childReason;
    }
    return undefined;
  }

  /** A SELECT and the ones chained to it by UNION/INTERSECT/EXCEPT (`_next`), with CTE scoping. */
  private visitSelect(
    head: Record<string, unknown>,
    scope: ReadonlySet<string>,
    depth: number,
  ): string | undefined {
    // The WITH of the first SELECT covers the whole chain; a WITH on a later one covers only that one, and so
    // does the WITH of a parenthesized first one (`(WITH s AS … SELECT …) UNION SELECT … FROM s` reads table s).
    const headScope = new Set(scope);
    let node: Record<string, unknown> | undefined = head;
    while (node) {
      if (node.type !== 'select') {
        return `Only SELECT statements can be combined with UNION/INTERSECT/EXCEPT; got ${statementName(node)}.`;
      }
      let reason = this.checkNode(node, scope);
      if (reason) return reason;
      const ownScope = new Set(headScope);
      reason = this.visitWith(node.with, ownScope, depth);
      if (reason) return reason;
      if (node === head && head.parentheses_symbol !== true) for (const name of ownScope) headScope.add(name);
      for (const [key, child] of Object.entries(node)) {
        if (key === 'with' || key === '_next') continue;
        reason = this.visit(child, ownScope, depth + 1);
        if (reason) return reason;
      }
      const next: unknown = node._next;
      if (next != null && !isRecord(next)) return 'Unsupported set operation in the query; simplify it.';
      node = next ?? undefined;
      depth += 1;
      if (depth > MAX_AST_DEPTH) return 'The query is nested too deeply; simplify it.';
    }
    return undefined;
  }

  /**
   * Walks the CTE bodies of a WITH clause and adds their names to `scope`. A body sees the CTEs defined before
   * it, and itself when RECURSIVE; anything else of that name is a table (the conservative reading).
   */
  private visitWith(withList: unknown, scope: Set<string>, depth: number): string | undefined {
    if (withList == null) return undefined;
    if (!Array.isArray(withList)) return 'Unsupported WITH clause; simplify the query.';
    const recursive = withList.some((cte) => isRecord(cte) && cte.recursive === true);
    for (const cte of withList) {
      if (!isRecord(cte)) return 'Unsupported WITH clause; simplify the query.';
      const name = identifierText(cte.name)?.toLowerCase();
      if (!name) return 'Unsupported WITH clause (a CTE without a name); simplify the query.';
      const stmt = cte.stmt;
      const body = isRecord(stmt) && 'ast' in stmt ? stmt.ast : stmt;
      if (!isRecord(body) || body.type !== 'select') {
        return `Every WITH (CTE) body must be a SELECT; ${name} is ${statementName(body)}.`;
      }
      const bodyScope = new Set(scope);
      if (recursive) bodyScope.add(name);
      const reason = this.visit(cte, bodyScope, depth + 1);
      if (reason) return reason;
      scope.add(name);
      this.cteNames.add(name);
    }
    return undefined;
  }

  /** Checks one object of the tree on its own; records table references. */
  private checkNode(node: Record<string, unknown>, scope: ReadonlySet<string>): string | undefined {
    const type = typeof node.type === 'string' ? node.type.toLowerCase() : undefined;
    if (type && STATEMENT_TYPES.has(type)) {
      return `Only SELECT statements are allowed; got ${statementName(node)}.`;
    }
    const into = node.into;
    if (
      into != null &&
      (!isRecord(into) || into.keyword != null || into.expr != null || into.position != null)
    ) {
      return intoReason();
    }
    if (node.locking_read != null) return lockingReason(String(node.locking_read));
    if (
      type === 'var' ||
      type === 'assign' ||
      (typeof node.prefix === 'string' && node.prefix.startsWith('@'))
    ) {
      return variablesReason();
    }
    if (type === 'param' || (type === 'origin' && node.value === '?')) return placeholdersReason();
    for (const key of ['db', 'schema', 'database']) {
      const name = identifierText(node[key])?.toLowerCase();
      if (name && SYSTEM_SCHEMAS.has(name)) return systemSchemaReason(name);
    }
    if (
      type === 'function' ||
      type === 'aggr_func' ||
      type === 'window_func' ||
      ('name' in node && 'args' in node)
    ) {
      const reason = checkFunction(node);
      if (reason) return reason;
    }
    if (typeof node.table === 'string' && !('column' in node) && type !== 'column_ref') {
      const db = typeof node.db === 'string' && node.db !== '' ? node.db : null;
      if (db !== null || !scope.has(node.table.toLowerCase())) this.tables.push({ db, table: node.table });
    }
    return undefined;
  }

  /** The real tables referenced, `table` or `db.table`, in order of first appearance. */
  tableNames(): string[] {
    return [...new Set(this.tables.map(tableName))];
  }

  sawTable(db: string | null, table: string): boolean {
    const wanted = tableName({ db, table }).toLowerCase();
    return this.tables.some((t) => tableName(t).toLowerCase() === wanted);
  }
}

function checkFunction(node: Record<string, unknown>): string | undefined {
  const parts = functionNameParts(node.name);
  if (!parts || parts.length === 0)
    return 'Unsupported function call syntax; call built-in functions by name.';
  const last = parts[parts.length - 1] as { text: string; quoted: boolean };
  if (isDeniedFunction(last.text)) return deniedFunctionReason(last.text);
  const schema = parts.length > 1 ? (parts[0] as { text: string }).text.toLowerCase() : undefined;
  if (schema && SYSTEM_SCHEMAS.has(schema)) return systemSchemaReason(schema);
  if (parts.length > 1) {
    return `Schema-qualified function calls (${parts.map((p) => p.text).join('.')}) are not allowed; use built-in functions only.`;
  }
  if (last.quoted)
    return `Quoted function names (\`${last.text}\`) are not allowed; write the plain built-in name.`;
  if (!PLAIN_IDENTIFIER.test(last.text)) {
    return `Function name ${JSON.stringify(last.text)} is not a plain identifier; use built-in functions only.`;
  }
  return undefined;
}

/** `COUNT` or `{ name: [{ type, value }], schema?: { type, value } }` as a list of name parts. */
function functionNameParts(name: unknown): { text: string; quoted: boolean }[] | undefined {
  if (typeof name === 'string') return [{ text: stripBackquotes(name), quoted: name.includes('`') }];
  if (!isRecord(name) || !Array.isArray(name.name)) return undefined;
  const parts: { text: string; quoted: boolean }[] = [];
  const pieces: unknown[] = name.schema != null ? [name.schema, ...name.name] : [...name.name];
  for (const piece of pieces) {
    if (typeof piece === 'string') {
      parts.push({ text: stripBackquotes(piece), quoted: piece.includes('`') });
      continue;
    }
    if (!isRecord(piece) || typeof piece.value !== 'string') return undefined;
    // `default` and `origin` are bare names (`origin`: keyword-like built-ins such as TRIM, CURRENT_DATE).
    const bare = piece.type === 'default' || piece.type === 'origin';
    parts.push({ text: stripBackquotes(piece.value), quoted: !bare || piece.value.includes('`') });
  }
  return parts;
}

// ---------------------------------------------------------------------------------------------------------
// Pass 3: the parser's own table list.

function checkTableList(tableList: unknown, walk: AstWalk): string | undefined {
  if (!Array.isArray(tableList)) return 'The query could not be analysed; simplify it.';
  for (const entry of tableList) {
    if (typeof entry !== 'string') return 'The query could not be analysed; simplify it.';
    const [verb = '', db = 'null', table = ''] = entry.split('::');
    if (verb.toLowerCase() !== 'select') {
      return `Only SELECT statements are allowed; the query would ${verb.toUpperCase()} ${table}.`;
    }
    if (SYSTEM_SCHEMAS.has(db.toLowerCase())) return systemSchemaReason(db.toLowerCase());
    const dbName = db === 'null' ? null : db;
    if (table.toLowerCase() === 'dual' && dbName === null) continue;
    if (dbName === null && walk.cteNames.has(table.toLowerCase())) continue;
    if (!walk.sawTable(dbName, table)) {
      return `Could not resolve the table reference ${tableName({ db: dbName, table })}; simplify the query.`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Helpers.

function refuse(reason: string): SqlGuardVerdict {
  return { ok: false, reason };
}

/** A refusal the same query might not get on a less loaded machine: not cached. */
function refuseForNow(reason: string): SqlGuardVerdict {
  const verdict = refuse(reason);
  transientVerdicts.add(verdict);
  return verdict;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stripBackquotes(name: string): string {
  return name.replaceAll('`', '');
}

/** A name as the parser stores it: a string, or `{ type, value }`. */
function identifierText(value: unknown): string | undefined {
  if (typeof value === 'string') return stripBackquotes(value);
  if (isRecord(value) && typeof value.value === 'string') return stripBackquotes(value.value);
  return undefined;
}

function tableName(ref: TableRef): string {
  return ref.db === null ? ref.table : `${ref.db}.${ref.table}`;
}

function isDeniedFunction(name: string): boolean {
  const lower = stripBackquotes(name).toLowerCase();
  return DENIED_FUNCTIONS.has(lower) || DENIED_FUNCTION_PREFIXES.some((p) => lower.startsWith(p));
}

function statementName(node: unknown): string {
  if (!isRecord(node) || typeof node.type !== 'string') return 'something else';
  const type = node.type.replaceAll('_', ' ').toUpperCase();
  const keyword = typeof node.keyword === 'string' ? ` ${node.keyword.toUpperCase()}` : '';
  return type === 'SELECT' ? type : `${type}${keyword}`;
}

function deniedFunctionReason(name: string): string {
  return `Function ${stripBackquotes(name).toUpperCase()}() is not allowed; remove it.`;
}

function systemSchemaReason(schema: string): string {
  return `The system schema ${schema} is not accessible; query the data tables (use the schema tools to list them).`;
}

function variablesReason(): string {
  return 'User and system variables (@x, @@x, :=) are not allowed; write the values into the query.';
}

function intoReason(): string {
  return 'INTO is not allowed (no SELECT … INTO OUTFILE, DUMPFILE or @variable, no INSERT INTO); just select the rows.';
}

function placeholdersReason(): string {
  return 'Placeholders (?, :name) are not allowed; write literal values into the query.';
}

function lockingReason(clause: string): string {
  return `Locking clauses (${clause.replace(/\s+/g, ' ').toUpperCase()}) are not allowed; remove it.`;
}

function parseErrorReason(sql: string, error: { message: string; location: unknown }): string {
  const location = isRecord(error.location) ? error.location.start : undefined;
  if (isRecord(location) && typeof location.offset === 'number') {
    const near = sql.slice(location.offset, location.offset + 30).replace(/\s+/g, ' ');
    const where = `line ${String(location.line)}, column ${String(location.column)}`;
    const what = near ? `near "${near}${sql.length > location.offset + 30 ? '…' : ''}"` : 'at the end';
    return `Could not parse the query as MySQL (${what}, ${where}); send one valid SELECT statement.`;
  }
  return `Could not parse the query as MySQL (${shortError(error.message)}); send one valid SELECT statement.`;
}

function shortError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 80 ? `${message.slice(0, 80)}…` : message;
}
