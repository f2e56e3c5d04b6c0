// The fleet configuration's checks at definition: every problem named in one line, before a worker opens anything.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineAgent, defineFleet, defineTool } from '../../../src/kernel.js';
import { validateTask } from '../../../src/queue/task-schema.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes.',
  parameters: z.object({ text: z.string() }),
  readOnly: true,
  execute: async ({ text }) => text,
});
const agent = (name: string, extra: Partial<Parameters<typeof defineAgent>[0]> = {}) =>
  defineAgent({ name, description: 'd', tools: ['echo'], ...extra });

describe('defineFleet', () => {
  it('takes agents with tools by name or as objects', () => {
    const fleet = defineFleet({ agents: [agent('a'), agent('b', { tools: [echo] })], tools: [echo] });
    expect([...fleet.agents.keys()]).toEqual(['a', 'b']);
    expect(fleet.tools.map((t) => t.name)).toEqual(['echo']);
  });

  it.each([
    [
      'a duplicate agent',
      () => defineFleet({ agents: [agent('a'), agent('a')], tools: [echo] }),
      'agent "a" is defined twice',
    ],
    [
      'a duplicate tool',
      () => defineFleet({ agents: [], tools: [echo, { ...echo }] }),
      'tool "echo" is defined twice',
    ],
    ['an unknown tool', () => defineFleet({ agents: [agent('a')] }), 'agent "a" names unknown tool "echo"'],
    [
      'an output schema JSON Schema cannot express',
      () => defineFleet({ agents: [agent('a', { output: z.bigint() })], tools: [echo] }),
      'agent "a" output: cannot become JSON Schema',
    ],
    [
      'a default budget above the ceiling',
      () =>
        defineFleet({
          agents: [agent('a', { budget: { maxSteps: 9 }, budgetCeiling: { maxSteps: 4 } })],
          tools: [echo],
        }),
      'budget.maxSteps 9 is above its budgetCeiling 4',
    ],
    [
      'an MCP server without command or url',
      () => defineFleet({ agents: [], mcpServers: [{ name: 'm' }] }),
      'MCP server "m" needs one of command or url',
    ],
  ])('refuses %s', (_label, define, message) => {
    expect(define).toThrow(message);
  });

  it('refuses a bad agent name at defineAgent', () => {
    expect(() => agent('no spaces')).toThrow(/agent name "no spaces" is invalid/);
  });
});

describe('a task naming an agent', () => {
  it('carries text or input, and any tool name; the default agent keeps the contract tools and takes no input', () => {
    expect(validateTask({ agent: 'kpi-digest', input: { region: 'EU' }, tools: ['fetch_kpis'] }).ok).toBe(
      true,
    );
    const issues = (value: unknown) => {
      const v = validateTask(value);
      return v.ok ? [] : v.issues.map((i) => `${i.path}: ${i.message}`);
    };
    // The field a task for an agent most often lacks is its input: named as such, with the agent.
    expect(issues({ agent: 'kpi-digest' })).toEqual([
      'input: required: give agent "kpi-digest" its input object (or task text, if it takes no input)',
    ]);
    expect(issues({})).toEqual(['task: required: the text of the task']);
    expect(issues({ agent: 'bad name!', task: 'x' })[0]).toMatch(/^agent: must be an agent name/);
    expect(issues({ task: 'x', input: { a: 1 } })).toEqual([
      'input: the default agent takes no input: name an agent',
    ]);
    expect(issues({ task: 'x', tools: ['fetch_kpis'] })[0]).toMatch(/^tools\.0: Invalid option/);
    expect(issues({ agent: 'a', input: [1, 2] })[0]).toMatch(/^input: /);
  });
});
