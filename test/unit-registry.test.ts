// The tool registry: own-property lookup, refused names, function definitions generated from zod, subsets
// and the compact listing of the JSON protocol.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../src/kernel/tool-registry.js';
import { defineTool, type Tool } from '../src/kernel/tool.js';

const tool = (
  name: string,
  parameters: z.ZodType = z.object({}),
  description = `The ${name} tool.`,
): Tool => ({
  name,
  description,
  parameters,
  execute: async () => name,
});

const sqlQuery = defineTool({
  name: 'sql_query',
  description: 'Run one read-only SELECT.',
  parameters: z.object({
    sql: z.string().describe('The SELECT statement'),
    limit: z.number().int().max(1000).default(100).describe('Rows at most'),
    explain: z.boolean().optional(),
  }),
  execute: async ({ sql }) => sql,
});
const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email.',
  parameters: z.object({ to: z.email(), subject: z.string(), body: z.string() }),
  execute: async () => 'sent',
});

describe('ToolRegistry lookup', () => {
  const registry = new ToolRegistry([sqlQuery, sendEmail]);

  it('finds its tools by name', () => {
    expect(registry.get('sql_query')).toBe(sqlQuery);
    expect(registry.get('send_email')).toBe(sendEmail);
    expect(registry.names).toEqual(['sql_query', 'send_email']);
  });

  it('Object.prototype names are unknown tools', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'])
      expect(registry.get(name), name).toBeUndefined();
    expect(registry.get('')).toBeUndefined();
    expect(registry.get('SQL_QUERY')).toBeUndefined();
  });

  it('a tool may be named like an Object.prototype property and is then found', () => {
    const odd = new ToolRegistry([tool('constructor'), tool('__proto__')]);
    expect(odd.get('constructor')?.name).toBe('constructor');
    expect(odd.get('__proto__')?.name).toBe('__proto__');
    expect(odd.get('toString')).toBeUndefined();
  });

  it('an empty registry has no names and no specs', () => {
    const empty = new ToolRegistry([]);
    expect(empty.names).toEqual([]);
    expect(empty.specs).toEqual([]);
    expect(empty.describeForPrompt()).toBe('');
  });
});

describe('ToolRegistry names', () => {
  it('refuses duplicates', () => {
    expect(() => new ToolRegistry([tool('a'), tool('b'), tool('a')])).toThrow('Duplicate tool name "a"');
  });

  it('refuses names the Chat Completions API would refuse', () => {
    for (const name of ['', 'has space', 'dot.name', 'slash/name', 'é', 'x'.repeat(65), 'semi;colon'])
      expect(() => new ToolRegistry([tool(name)]), JSON.stringify(name)).toThrow(/Invalid tool name/);
  });

  it('accepts letters, digits, _ and - up to 64 characters', () => {
    const names = ['a', 'A-b_9', 'x'.repeat(64), '0']; // numeric names too
    expect(() => new ToolRegistry(names.map((name) => tool(name)))).not.toThrow();
  });
});

describe('ToolRegistry specs', () => {
  const registry = new ToolRegistry([sqlQuery, sendEmail]);

  it('one function definition per tool, in order, generated from the zod schema', () => {
    expect(registry.specs).toHaveLength(2);
    const [sql, email] = registry.specs;
    expect(sql?.type).toBe('function');
    expect(sql?.function.name).toBe('sql_query');
    expect(sql?.function.description).toBe('Run one read-only SELECT.');
    const parameters = sql?.function.parameters;
    expect(parameters).not.toHaveProperty('$schema');
    expect(parameters?.type).toBe('object');
    // input view: a field with a default is not required of the model
    expect(parameters?.required).toEqual(['sql']);
    expect(parameters?.properties).toMatchObject({
      sql: { type: 'string', description: 'The SELECT statement' },
      limit: { type: 'integer', default: 100, maximum: 1000, description: 'Rows at most' },
      explain: { type: 'boolean' },
    });
    expect(email?.function.parameters.required).toEqual(['to', 'subject', 'body']);
    expect(email?.function.parameters.properties).toMatchObject({ to: { type: 'string', format: 'email' } });
  });

  it('the specs are computed once (one array, so its token count is cached)', () => {
    expect(registry.specs).toBe(registry.specs);
  });

  it('specs are plain JSON', () => {
    expect(JSON.parse(JSON.stringify(registry.specs))).toEqual(registry.specs);
  });
});

describe('ToolRegistry.pick', () => {
  const registry = new ToolRegistry([sqlQuery, sendEmail, tool('list_tables')]);

  it('a subset in the order asked, with the same tools and specs', () => {
    const picked = registry.pick(['list_tables', 'sql_query']);
    expect(picked.names).toEqual(['list_tables', 'sql_query']);
    expect(picked.get('sql_query')).toBe(sqlQuery);
    expect(picked.get('send_email')).toBeUndefined();
    expect(picked.specs.map((s) => s.function.name)).toEqual(['list_tables', 'sql_query']);
    expect(picked.specs[1]).toEqual(registry.specs[0]);
  });

  it('skips names it does not have, prototype names included', () => {
    expect(registry.pick(['sql_query', 'nope', 'constructor', '__proto__']).names).toEqual(['sql_query']);
    expect(registry.pick([]).names).toEqual([]);
  });

  it('leaves the original registry unchanged', () => {
    registry.pick(['sql_query']);
    expect(registry.names).toEqual(['sql_query', 'send_email', 'list_tables']);
  });
});

describe('ToolRegistry.describeForPrompt', () => {
  it('one compact line per tool: optional fields marked, types only, then the description', () => {
    const registry = new ToolRegistry([sqlQuery, sendEmail, tool('list_tables')]);
    expect(registry.describeForPrompt()).toBe(
      [
        '- sql_query(sql: string, limit?: integer, explain?: boolean): Run one read-only SELECT.',
        '- send_email(to: string, subject: string, body: string): Send an email.',
        '- list_tables(): The list_tables tool.',
      ].join('\n'),
    );
  });

  it('is much shorter than the JSON schemas', () => {
    const registry = new ToolRegistry([sqlQuery, sendEmail]);
    expect(registry.describeForPrompt().length).toBeLessThan(JSON.stringify(registry.specs).length / 2);
  });

  it('a field without a single type is shown as any', () => {
    const registry = new ToolRegistry([tool('pick', z.object({ value: z.any() }))]);
    expect(registry.describeForPrompt()).toBe('- pick(value: any): The pick tool.');
  });
});
