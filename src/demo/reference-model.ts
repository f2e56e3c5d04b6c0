// The demo's scripted model: without an API key, `npm run demo` runs against this instead of a real LLM.
// It plays the reference trajectory of the original article, reading the conversation like a model would:
//   1. a SQL query with a mistake (a column that does not exist), which the database refuses;
//   2. the corrected query;
//   3. one thank-you email to each of the top 3 customers, as three parallel calls;
//   4. the answer.
// Report tasks get one query and an answer built from its result. It speaks both protocols, because the
// scripted server renders each reply for the protocol of the request.
// A run of an agent with notes on may open with notes recalled from earlier runs (docs/notes.md): the output of a
// `recall_notes` call at the head of the transcript. The model reads them as a model would: when a correction
// note says which query worked, or which column replaced the one its query named, it writes the right query
// first (one model call fewer). It reads nothing but the request's messages.
// The schema task (SCHEMA_TASK) needs a column of `orders` it does not know: it calls describe_table first and
// queries with the column the result names; given a recalled fact of that describe_table call (a note the worker
// keeps from a run's trace, docs/notes.md), it takes the columns from the fact and skips the call.
import type { ChatMessage } from '../kernel/messages.js';
import { isSummaryRequest } from '../kernel/memory.js';
import { RECALL_TOOL } from '../kernel/recalled-notes.js';
import { modelCalls } from '../testing/transcript.js';
import type { RecordedRequest, ReplyRule, ScriptedReply } from '../testing/scripted-model-server.js';

export const REFERENCE_TASK = 'Find the top 3 customers by Q1 2024 sales and email each a thank-you note';

const WRONG_SQL =
  "SELECT c.name, c.email, SUM(o.amount) AS q1_sales FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'completed' AND o.order_date BETWEEN '2024-01-01' AND '2024-03-31' GROUP BY c.id ORDER BY q1_sales DESC LIMIT 3";
const RIGHT_SQL =
  "SELECT c.name, c.email, SUM(o.total) AS q1_sales FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'completed' AND o.order_date BETWEEN '2024-01-01' AND '2024-03-31' GROUP BY c.id, c.name, c.email ORDER BY q1_sales DESC LIMIT 3";

/** The column the first query sums, and the one the data has (the `orders` table's `total`). */
const WRONG_COLUMN = 'o.amount';
const RIGHT_COLUMN = 'o.total';

/** A task whose query needs a column the model looks up first: `describe_table` of `orders`, or a recalled fact of it. */
export const SCHEMA_TASK = 'Count the orders of each status';
const SCHEMA_TABLE = 'orders';

/** The demo's report tasks, each with the query the scripted model answers it with. */
export const REPORT_TASKS: readonly { task: string; sql: string }[] = [
  {
    task: 'Report the number of completed orders and the revenue per quarter of 2024',
    sql: "SELECT QUARTER(order_date) AS quarter, COUNT(*) AS orders, SUM(total) AS revenue FROM orders WHERE status = 'completed' AND YEAR(order_date) = 2024 GROUP BY quarter ORDER BY quarter",
  },
  {
    task: 'Which product category brought the most revenue in 2023?',
    sql: "SELECT p.category, SUM(i.quantity * i.unit_price) AS revenue FROM order_items i JOIN products p ON p.id = i.product_id JOIN orders o ON o.id = i.order_id WHERE o.status = 'completed' AND YEAR(o.order_date) = 2023 GROUP BY p.category ORDER BY revenue DESC LIMIT 3",
  },
  {
    task: 'How many customers do we have per country? List the top 5 countries',
    sql: 'SELECT country, COUNT(*) AS customers FROM customers GROUP BY country ORDER BY customers DESC LIMIT 5',
  },
];

/** The results of its own calls the model has seen so far, oldest first (the notes recalled for it are not). */
const observations = (messages: readonly ChatMessage[]): string[] =>
  modelCalls(messages).flatMap((call) =>
    call.tool === RECALL_TOOL || call.result === undefined ? [] : [call.result],
  );

/** The texts of the notes recalled into the transcript (the `recall_notes` results), oldest first. */
export function recalledNoteTexts(messages: readonly ChatMessage[]): string[] {
  const texts: string[] = [];
  for (const call of modelCalls(messages)) {
    if (call.tool !== RECALL_TOOL || call.result === undefined) continue;
    // Over the JSON protocol a result may carry its `Result of …:` framing.
    const json = call.result.slice(Math.max(0, call.result.indexOf('{')));
    try {
      const parsed = JSON.parse(json) as { notes?: { text?: unknown }[] };
      for (const note of parsed.notes ?? []) if (typeof note.text === 'string') texts.push(note.text);
    } catch {
      // Not the recall's JSON: nothing learned from it.
    }
  }
  return texts;
}

/** One argument part of a correction note: compact JSON, or (when cut) its JSON text quoted as a string. */
function noteArgs(part: string): { text: string; sql: string | undefined } | undefined {
  try {
    const value = JSON.parse(part) as unknown;
    if (typeof value === 'string') return { text: value, sql: undefined };
    const sql = (value as { sql?: unknown } | null)?.sql;
    return { text: JSON.stringify(value), sql: typeof sql === 'string' ? sql : undefined };
  } catch {
    return undefined;
  }
}

/** The identifier (`o.amount`) around `at` in `text`. */
function identifierAt(text: string, at: number): string {
  let start = at;
  while (start > 0 && /[\w.]/.test(text[start - 1]!)) start--;
  return /^[\w.]+/.exec(text.slice(start))?.[0] ?? '';
}

/**
 * What the recalled notes teach about the top-customers query: a query that worked (when a note quotes it whole),
 * else the column that replaced one the database did not know (`o.amount` → `o.total`): the note's failed and
 * working arguments differ first where the unknown column stood.
 */
function learnedFromNotes(notes: readonly string[]): { sql?: string; column?: { from: string; to: string } } {
  for (const note of notes) {
    const m =
      /^sql_query failed with: ("(?:[^"\\]|\\.)*") when called with (.+); it worked with (.+)\.$/.exec(note);
    if (!m) continue;
    const error = noteArgs(m[1]!)?.text ?? '';
    const failed = noteArgs(m[2]!);
    const worked = noteArgs(m[3]!);
    if (!failed || !worked) continue;
    if (worked.sql && /\bcustomers\b/.test(worked.sql) && /\borders\b/.test(worked.sql))
      return { sql: worked.sql };
    const unknown = /Unknown column '([\w.]+)'/.exec(error)?.[1];
    if (!unknown) continue;
    let at = 0;
    while (at < failed.text.length && failed.text[at] === worked.text[at]) at++;
    const from = identifierAt(failed.text, at);
    const to = identifierAt(worked.text, at);
    if (from === unknown && to !== '' && to !== from) return { column: { from, to } };
  }
  return {};
}

/** The first query: the one it would write, unless a recalled note says what worked instead. */
function firstQuery(messages: readonly ChatMessage[]): string {
  const learned = learnedFromNotes(recalledNoteTexts(messages));
  if (learned.sql) return learned.sql;
  // Its query's amount column is the one the note corrected: the query it writes once it knows the right one.
  if (learned.column && learned.column.from === WRONG_COLUMN)
    return RIGHT_SQL.replace(RIGHT_COLUMN, learned.column.to);
  return WRONG_SQL;
}

/** The column names of a describe_table result for `table` (its first line `table:`, then one column a line). */
function describedColumns(result: string, table: string): string[] {
  const lines = result.split('\n');
  const head = lines.findIndex((line) => new RegExp(`(^|\\s)${table}(?: \\(view\\))?:$`).test(line.trim()));
  if (head < 0) return [];
  // A result a note quotes cut ends with `…`: its last line may be a column's name cut short.
  const body = lines.slice(head + 1).filter((line) => !line.endsWith('…'));
  return body.flatMap((line) => /^(\w+) \S/.exec(line)?.[1] ?? []);
}

/** The describe_table result of `table` a recalled fact quotes (`describe_table returned, for {…}: "…"`). */
function recalledDescription(messages: readonly ChatMessage[], table: string): string | undefined {
  for (const note of recalledNoteTexts(messages)) {
    const m = /^describe_table returned, for (.+): ("(?:[^"\\]|\\.)*")$/.exec(note);
    if (!m) continue;
    try {
      const args = JSON.parse(m[1]!) as { table?: unknown } | null;
      if (args?.table === table) return JSON.parse(m[2]!) as string;
    } catch {
      // Arguments quoted cut, or not JSON: not a fact about this table.
    }
  }
  return undefined;
}

/**
 * Counts orders per status: the status column's name from its own describe_table call, or from a recalled fact of
 * one (then it makes no such call); the query; the answer. A query that failed (the fact was out of date: the
 * column renamed) sends it to describe the table itself, and its own result counts over the fact.
 */
function schemaReply(request: RecordedRequest): ScriptedReply {
  const calls = modelCalls(request.messages);
  const queries = calls.filter((c) => c.tool === 'sql_query' && c.result !== undefined);
  const last = queries.at(-1)?.result?.replace(/^Result of sql_query: /, '');
  if (last !== undefined && !/^Error\b|Unknown column/.test(last))
    return { answer: `Orders per status:\n${last}` };
  const described = calls.findLast(
    (c) => c.tool === 'describe_table' && (c.args as { table?: unknown } | undefined)?.table === SCHEMA_TABLE,
  );
  const text = described?.result ?? recalledDescription(request.messages, SCHEMA_TABLE);
  const column = (text === undefined ? [] : describedColumns(text, SCHEMA_TABLE)).find((name) =>
    /status/i.test(name),
  );
  const sql = `SELECT ${column}, COUNT(*) AS orders FROM ${SCHEMA_TABLE} GROUP BY ${column} ORDER BY ${column}`;
  const tried = queries.some((q) => (q.args as { sql?: unknown } | undefined)?.sql === sql);
  if (column && !tried) return { actions: [{ tool: 'sql_query', args: { sql } }] };
  if (!described) return { actions: [{ tool: 'describe_table', args: { table: SCHEMA_TABLE } }] };
  return {
    answer: `No query of the ${SCHEMA_TABLE} table's status worked: ${last ?? 'it has no status column'}`,
  };
}

interface Customer {
  name: string;
  email: string;
  sales: string;
}

/** Rows of the top-customers result, whatever the exact rendering: any line with an address in it. */
function customersIn(result: string): Customer[] {
  const customers: Customer[] = [];
  for (const line of result.split('\n')) {
    const email = /[\w.+'-]+@example\.com/.exec(line)?.[0];
    if (!email) continue;
    const cells = line.split('|').map((cell) => cell.trim());
    const at = cells.findIndex((cell) => cell.includes(email));
    customers.push({ name: cells[at - 1] ?? email, email, sales: cells[at + 1] ?? '' });
  }
  return customers;
}

function referenceReply(request: RecordedRequest): ScriptedReply {
  const seen = observations(request.messages);
  const last = seen.at(-1) ?? '';
  if (seen.length === 0)
    return { actions: [{ tool: 'sql_query', args: { sql: firstQuery(request.messages) } }] };
  if (/sent|already/i.test(last) && seen.some((o) => customersIn(o).length > 0)) {
    const customers = customersIn(seen.find((o) => customersIn(o).length > 0)!);
    const list = customers.map((c, i) => `${i + 1}. ${c.name} <${c.email}> (${c.sales})`).join('; ');
    return { answer: `Top 3 customers by Q1 2024 sales: ${list}. Each was emailed a thank-you note.` };
  }
  const customers = customersIn(last);
  if (customers.length > 0) {
    return {
      actions: customers.slice(0, 3).map((c) => ({
        tool: 'send_email',
        args: {
          to: c.email,
          subject: 'Thank you for your business',
          body: `Dear ${c.name},\n\nThank you for being one of our top customers in the first quarter of 2024. We truly appreciate your business.\n\nBest regards,\nThe Sales Team`,
        },
      })),
    };
  }
  // The first query failed (or returned nothing useful): fix it.
  return { actions: [{ tool: 'sql_query', args: { sql: RIGHT_SQL } }] };
}

function reportReply(request: RecordedRequest, sql: string): ScriptedReply {
  const seen = observations(request.messages);
  if (seen.length === 0) return { actions: [{ tool: 'sql_query', args: { sql } }] };
  const rows = (seen.at(-1) ?? '').replace(/^Result of sql_query: /, '').trim();
  return { answer: `Here is the report:\n${rows}` };
}

/** What the demo's model answers to any task but the demo's own. */
export const NO_MODEL_CONFIGURED =
  'no model configured: set OPENAI_API_KEY / OPENAI_BASE_URL (the offline demo model answers only the demo tasks)';

/** The rules of the demo's scripted model. */
export const referenceModelRules: ReplyRule[] = [
  (request) => {
    if (isSummaryRequest(request.messages)) {
      return { text: 'Done: earlier queries ran. Goal: finish the task with the results at hand.' };
    }
    const task = String(request.messages[1]?.content ?? '');
    const report = REPORT_TASKS.find((r) => r.task === task);
    // Never a canned answer: a task the demo does not know ends failed, saying why (a 400 is not retried).
    if (task !== REFERENCE_TASK && task !== SCHEMA_TASK && !report)
      return { fault: 'bad_request', message: NO_MODEL_CONFIGURED };
    if (request.tools === undefined && String(request.messages.at(-1)?.content).includes('No more tool')) {
      return { answer: 'Stopped at the limit; see the steps so far.' };
    }
    if (report) return reportReply(request, report.sql);
    if (task === SCHEMA_TASK) return schemaReply(request);
    return referenceReply(request);
  },
];
