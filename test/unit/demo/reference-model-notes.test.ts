// The demo's scripted model reads a recalled correction, or a recalled fact of a describe_table call, as a model
// would: from the `recall_notes` result at the head of its transcript (the note text the worker derives from a
// real run's trace), in either protocol, and from nothing outside the tool messages.
import { describe, expect, it } from 'vitest';
import { REFERENCE_TASK, referenceModelRules, SCHEMA_TASK } from '../../../src/demo/reference-model.js';
import type { ChatMessage } from '../../../src/kernel/messages.js';
import { jsonProtocol } from '../../../src/kernel/protocol-json.js';
import { toolsProtocol } from '../../../src/kernel/protocol-tools.js';
import { recallTurn } from '../../../src/kernel/recalled-notes.js';
import type { StepTrace } from '../../../src/kernel/types.js';
import { deriveFactNotes } from '../../../src/notes/derive-facts.js';
import { deriveCorrectionNotes } from '../../../src/notes/derive-notes.js';
import type { RecordedRequest, ScriptedReply } from '../../../src/testing/scripted-model-server.js';

const rule = referenceModelRules[0]!;

/** The model's first query in run 1 (no notes): the one the database refuses. */
function firstSql(messages: ChatMessage[], tools = true): string {
  const reply = rule({ messages, tools: tools ? [] : undefined } as unknown as RecordedRequest);
  const action = (reply as Extract<ScriptedReply, { actions: unknown }>).actions[0]!;
  expect(action.tool).toBe('sql_query');
  return (action.args as { sql: string }).sql;
}

const start: ChatMessage[] = [
  { role: 'system', content: 'instructions' },
  { role: 'user', content: REFERENCE_TASK },
];

/** The note a run that failed with `wrong` then worked with `right` leaves (src/notes/derive-notes.ts). */
function correction(wrong: string, error: string, right: string): string {
  const steps = [
    {
      step: 1,
      actions: [{ tool: 'sql_query', args: { sql: wrong }, ok: false, errorCode: 'invalid_query' }],
      observations: [`Error: ${error}`],
    },
    {
      step: 2,
      actions: [{ tool: 'sql_query', args: { sql: right }, ok: true, errorCode: null }],
      observations: ['ok'],
    },
  ] as unknown as StepTrace[];
  const [note] = deriveCorrectionNotes(steps, {
    agent: 'default',
    tenant: '',
    jobId: 'j',
    expiresAt: new Date(),
  });
  return note!.text;
}

describe.each([toolsProtocol, jsonProtocol])('the reference model over the $name protocol', (protocol) => {
  const withNote = (text: string): ChatMessage[] => [
    ...start,
    ...recallTurn(protocol, {
      query: REFERENCE_TASK,
      notes: [{ id: 'note_1', kind: 'correction', learned: '2026-12-07', text }],
    }),
  ];
  const tools = protocol.name === 'tools';
  const wrong = firstSql(start, tools);

  it('without notes, sums a column the orders table does not have', () => {
    expect(wrong).toContain('SUM(o.amount)');
  });

  it('given the correction its own failed run leaves, writes the corrected query first', () => {
    const note = correction(
      wrong,
      "Unknown column 'o.amount' in 'field list'",
      wrong.replace('o.amount', 'o.total'),
    );
    expect(note).toContain('…'); // the query is longer than a note quotes: only the corrected column shows
    const sql = firstSql(withNote(note), tools);
    expect(sql).toContain('SUM(o.total)');
    expect(sql).not.toContain('o.amount');
  });

  it('writes a whole query a note quotes as the one that worked', () => {
    const short = 'SELECT c.name, c.email FROM customers c JOIN orders o ON o.customer_id = c.id LIMIT 3';
    const note = correction('SELECT x FROM customers', "Unknown column 'x' in 'field list'", short);
    expect(firstSql(withNote(note), tools)).toBe(short);
  });

  it('a note about something else changes nothing', () => {
    const note = correction(
      'SELECT nope FROM products',
      "Unknown column 'nope' in 'field list'",
      'SELECT name FROM products',
    );
    expect(firstSql(withNote(note), tools)).toBe(wrong);
    expect(firstSql(withNote('customers like short emails'), tools)).toBe(wrong);
  });
});

/** The fact a run that described `table` leaves (src/notes/derive-facts.ts). */
function fact(table: string, result: string): string {
  const steps = [
    {
      step: 1,
      actions: [{ tool: 'describe_table', args: { table }, ok: true, errorCode: null }],
      observations: [result],
    },
  ] as unknown as StepTrace[];
  const [note] = deriveFactNotes(steps, {
    agent: 'default',
    tenant: '',
    jobId: 'j',
    expiresAt: new Date(),
    keepsFacts: (tool) => tool === 'describe_table',
  });
  return note!.text;
}

const ORDERS =
  'orders:\nid int(10) unsigned, primary key\ncustomer_id int(10) unsigned, indexed, references customers.id\n' +
  'order_date date, indexed\nstatus varchar(16)\ntotal decimal(12,2)';

describe.each([toolsProtocol, jsonProtocol])('the schema task over the $name protocol', (protocol) => {
  const tools = protocol.name === 'tools';
  const begin: ChatMessage[] = [
    { role: 'system', content: 'instructions' },
    { role: 'user', content: SCHEMA_TASK },
  ];
  const withNotes = (...texts: string[]): ChatMessage[] => [
    ...begin,
    ...recallTurn(protocol, {
      query: SCHEMA_TASK,
      notes: texts.map((text, i) => ({ id: `note_${i}`, kind: 'fact', learned: '2026-12-07', text })),
    }),
  ];
  const firstAction = (messages: ChatMessage[]) => {
    const reply = rule({ messages, tools: tools ? [] : undefined } as unknown as RecordedRequest);
    return (reply as Extract<ScriptedReply, { actions: unknown }>).actions[0]!;
  };

  it('without notes, describes the table first', () => {
    expect(firstAction(begin)).toEqual({ tool: 'describe_table', args: { table: 'orders' } });
  });

  it('given a recalled fact of that call, skips it and queries with the column the fact names', () => {
    const action = firstAction(withNotes(fact('orders', ORDERS)));
    expect(action.tool).toBe('sql_query');
    expect((action.args as { sql: string }).sql).toBe(
      'SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY status',
    );
    // The column is the fact's, not a name the model knew anyway.
    const renamed = firstAction(withNotes(fact('orders', ORDERS.replace('status', 'order_status'))));
    expect((renamed.args as { sql: string }).sql).toContain('GROUP BY order_status');
  });

  it("describes the table anyway given a fact of another table's, one cut before the column, or the fact outside a tool message", () => {
    const describe = { tool: 'describe_table', args: { table: 'orders' } };
    expect(firstAction(withNotes(fact('customers', ORDERS.replace('orders:', 'customers:'))))).toEqual(
      describe,
    );
    const cut = fact('orders', `${ORDERS.replace('\nstatus', `${'\nnote varchar(9)'.repeat(40)}\nstatus`)}`);
    expect(cut).toContain('…');
    expect(firstAction(withNotes(cut))).toEqual(describe);
    const framed: ChatMessage[] = [
      { role: 'system', content: `instructions. Notes: ${fact('orders', ORDERS)}` },
      { role: 'user', content: SCHEMA_TASK },
    ];
    expect(firstAction(framed)).toEqual(describe);
  });
});

it('the schema task: a query failing on a recalled fact sends it to describe the table, and its own result counts', () => {
  const renamed = ORDERS.replace('status', 'order_status');
  let n = 0;
  const turn = (tool: string, args: unknown, result: string): ChatMessage[] => {
    const id = `call_${n++}`;
    return [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }],
      },
      { role: 'tool', tool_call_id: id, content: result },
    ] as ChatMessage[];
  };
  const stale = [
    { role: 'system', content: 'instructions' },
    { role: 'user', content: SCHEMA_TASK },
    ...recallTurn(toolsProtocol, {
      query: SCHEMA_TASK,
      notes: [{ id: 'note_1', kind: 'fact', learned: '2026-12-07', text: fact('orders', ORDERS) }],
    }),
    ...turn(
      'sql_query',
      { sql: 'SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY status' },
      "Error: Unknown column 'status' in 'field list'",
    ),
  ] as ChatMessage[];
  const reply = (messages: ChatMessage[]) =>
    rule({ messages, tools: [] } as unknown as RecordedRequest) as Extract<
      ScriptedReply,
      { actions: unknown }
    >;
  expect(reply(stale).actions).toEqual([{ tool: 'describe_table', args: { table: 'orders' } }]);
  const described = [...stale, ...turn('describe_table', { table: 'orders' }, renamed)];
  expect(reply(described).actions).toEqual([
    {
      tool: 'sql_query',
      args: {
        sql: 'SELECT order_status, COUNT(*) AS orders FROM orders GROUP BY order_status ORDER BY order_status',
      },
    },
  ]);
});
