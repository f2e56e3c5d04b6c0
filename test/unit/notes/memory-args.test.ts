// `npm run memory`'s command line (src/notes/memory-args.ts): what each command takes, and refusals that name the
// argument at fault. Pure.
import { describe, expect, it } from 'vitest';
import { parseMemoryArgs } from '../../../src/notes/memory-args.js';

describe('parseMemoryArgs', () => {
  it('reads list, show, forget and forget --agent', () => {
    expect(parseMemoryArgs(['list'])).toEqual({ kind: 'list', filter: {} });
    expect(parseMemoryArgs(['list', '--agent', 'default', '--tenant', 'acme', '--limit', '5'])).toEqual({
      kind: 'list',
      filter: { agent: 'default', tenant: 'acme', limit: 5 },
    });
    expect(parseMemoryArgs(['list', '--tenant', ''])).toEqual({ kind: 'list', filter: { tenant: '' } });
    expect(parseMemoryArgs(['show', 'note_ab12'])).toEqual({ kind: 'show', id: 'note_ab12' });
    expect(parseMemoryArgs(['forget', 'note_ab12'])).toEqual({ kind: 'forget', id: 'note_ab12' });
    expect(parseMemoryArgs(['forget', '--agent', 'default'])).toEqual({
      kind: 'forget-all',
      agent: 'default',
    });
    expect(parseMemoryArgs(['forget', '--agent', 'default', '--tenant', ''])).toEqual({
      kind: 'forget-all',
      agent: 'default',
      tenant: '',
    });
    expect(parseMemoryArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseMemoryArgs(['list', '-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [[], 'a command is needed: list, show or forget'],
    [['remember'], 'unknown command "remember"'],
    [['list', '--limit', '0'], '--limit must be a whole number from 1 to 1000'],
    [['list', '--limit', '1001'], '--limit must be a whole number from 1 to 1000'],
    [['list', '--agent', 'no spaces'], '--agent must be an agent name'],
    [['list', '--tenant', 'a/b'], '--tenant must be a tenant name'],
    [['list', 'extra'], 'list takes no argument "extra"'],
    [['show'], 'show takes one note id'],
    [['show', 'a', 'b'], 'show takes one note id'],
    [['show', 'a b'], '"a b" is not a note id'],
    [['show', '--agent', 'x', 'id'], '--agent is not an option of show'],
    [['forget'], 'forget takes one note id'],
    [['forget', 'id', '--agent', 'x'], 'forget takes a note id or --agent A [--tenant T], not both'],
    [['forget', '--tenant', 'acme'], '--tenant needs --agent'],
    [['forget', '--limit', '3', 'id'], '--limit is not an option of forget'],
    [['list', '--bogus'], "Unknown option '--bogus'"],
  ])('%j is refused: %s', (argv, message) => {
    const parsed = parseMemoryArgs(argv);
    expect(parsed.kind).toBe('error');
    expect((parsed as { message: string }).message).toContain(message);
  });
});
