// An agent with notes on gets the fleet's own `recall_notes` (once it has notes) and, with `write`, `keep_note`
// (src/worker/run-notes.ts). A tool of its own by either name would collide with them: its first run works, and
// every run after it has a note would fail building its tools. Such an agent is refused when it is defined.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineAgent, defineFleet, defineTool } from '../../../src/kernel.js';
import { tokenCounterFor } from '../../../src/kernel/tokens.js';
import { ToolRegistry } from '../../../src/kernel/tool-registry.js';
import type { NoteStore } from '../../../src/notes/note.js';
import { RunNotes } from '../../../src/worker/run-notes.js';

const named = (name: string) =>
  defineTool({
    name,
    description: 'a tool of the fleet',
    parameters: z.object({ text: z.string() }),
    readOnly: true,
    execute: async ({ text }) => text,
  });

describe('a tool named like a notes tool', () => {
  it("collides with the run's own once the agent has notes", () => {
    const session = new RunNotes({} as NoteStore, tokenCounterFor('gpt-4o')).session(
      { agent: 'analyst', tenant: '' },
      { recall: 5, maxTokens: 400, keepDays: 30, write: true },
      'task',
    );
    expect(() => new ToolRegistry([named('recall_notes')]).with(...session.tools(true))).toThrow(/Duplicate/);
    expect(() => new ToolRegistry([named('keep_note')]).with(...session.tools(false))).toThrow(/Duplicate/);
  });

  for (const name of ['recall_notes', 'keep_note']) {
    it(`is refused in an agent with notes on: ${name}, by name or defined inside it`, () => {
      expect(() =>
        defineFleet({
          tools: [named(name)],
          agents: [
            defineAgent({
              name: 'analyst',
              description: 'an agent',
              tools: [name],
              notes: { enabled: true, write: true },
            }),
          ],
        }),
      ).toThrow(new RegExp(`agent "analyst".*"${name}"`));
      expect(() =>
        defineAgent({
          name: 'analyst',
          description: 'an agent',
          tools: [named(name)],
          notes: { enabled: true },
        }),
      ).toThrow(new RegExp(`"${name}"`));
    });
  }

  it('is accepted in an agent with notes off', () => {
    expect(() =>
      defineFleet({
        tools: [named('recall_notes')],
        agents: [defineAgent({ name: 'a', description: 'an agent', tools: ['recall_notes'] })],
      }),
    ).not.toThrow();
  });
});
