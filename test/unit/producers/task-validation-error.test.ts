// A refused task's error says what it is: its own name (not its parent's, InputError), its fields, and, for a
// task of an agent that takes an input, the field `input` rather than `task`. Pure: no Redis.
import { describe, expect, it } from 'vitest';
import { TaskValidationError } from '../../../src/client/fleet-client.js';
import { checkTaskAgainstCatalog } from '../../../src/catalog/check-task.js';
import type { Catalog, CatalogAgent } from '../../../src/catalog/catalog.js';
import { InputError } from '../../../src/kernel/errors.js';
import { validateTask } from '../../../src/queue/task-schema.js';

describe('TaskValidationError', () => {
  it('reports its own name, stays an InputError, and lists the fields', () => {
    const error = new TaskValidationError([{ path: 'budget.maxSteps', message: 'too big' }]);
    expect(error).toBeInstanceOf(InputError);
    expect(error.name).toBe('TaskValidationError');
    expect(String(error)).toBe('TaskValidationError: Invalid task: budget.maxSteps: too big');
    expect(error.kind).toBe('input');
    expect(new InputError('c', 'm').name).toBe('InputError');
  });
});

describe('a task without its input', () => {
  const agent = (name: string, input: unknown): CatalogAgent =>
    ({ name, tools: [], budgetCeiling: {}, input }) as unknown as CatalogAgent;
  const catalog = {
    agents: [
      agent('greeter', { type: 'object', properties: { name: { type: 'string' } } }),
      agent('echo', null),
    ],
  } as unknown as Catalog;

  it('names `input` and the agent, before and after the catalog is known', () => {
    const shape = validateTask({ agent: 'greeter' });
    expect(shape.ok ? [] : shape.issues).toEqual([
      {
        path: 'input',
        message: 'required: give agent "greeter" its input object (or task text, if it takes no input)',
      },
    ]);
    expect(checkTaskAgainstCatalog({ agent: 'greeter', task: 'hello' }, catalog)).toEqual([
      { path: 'input', message: 'required by agent "greeter"' },
    ]);
  });

  it('names `task` for an agent that takes no input', () => {
    expect(checkTaskAgainstCatalog({ agent: 'echo' } as never, catalog)).toEqual([
      { path: 'task', message: 'required: agent "echo" takes no input, only task text' },
    ]);
  });
});
